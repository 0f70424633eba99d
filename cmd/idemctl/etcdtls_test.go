package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// pki writes a CA, a server certificate for 127.0.0.1 and a client
// certificate signed by it into dir and returns their paths.
func pki(t *testing.T, dir string) (ca, srvCert, srvKey, cliCert, cliKey string) {
	t.Helper()
	now := time.Now()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test etcd CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage) (string, string) {
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kd, _ := x509.MarshalECPrivateKey(k)
		return write(name+".crt", "CERTIFICATE", der), write(name+".key", "EC PRIVATE KEY", kd)
	}
	ca = write("ca.crt", "CERTIFICATE", caDER)
	srvCert, srvKey = leaf(2, "server", x509.ExtKeyUsageServerAuth)
	cliCert, cliKey = leaf(3, "client", x509.ExtKeyUsageClientAuth)
	return ca, srvCert, srvKey, cliCert, cliKey
}

// TestEtcdClientCertificateFlagsReachAMutualTLSEtcd: against an etcd that
// requires client certificates (ETCD_CLIENT_CERT_AUTH, as deploy/etcd
// tells operators to turn on), idemctl reads it with --etcd-cacert,
// --etcd-cert and --etcd-key, and without the client certificate fails
// naming etcd and its address.
func TestEtcdClientCertificateFlagsReachAMutualTLSEtcd(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // no dev cluster
	dir := t.TempDir()
	ca, srvCert, srvKey, cliCert, cliKey := pki(t, dir)
	ports := make([]int, 2)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[0])}
	client := url.URL{Scheme: "https", Host: fmt.Sprintf("127.0.0.1:%d", ports[1])}
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir = "tls", filepath.Join(dir, "etcd")
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.InitialCluster = "tls=" + peer.String()
	cfg.ClusterState = embed.ClusterStateFlagNew
	cfg.ClientTLSInfo.CertFile, cfg.ClientTLSInfo.KeyFile = srvCert, srvKey
	cfg.ClientTLSInfo.TrustedCAFile, cfg.ClientTLSInfo.ClientCertAuth = ca, true
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.UnsafeNoFsync, cfg.TickMs, cfg.ElectionMs = true, 10, 100
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		t.Fatal("embedded etcd not ready")
	}
	conn := []string{"--config", prodConfig, "--etcd", client.String(), "--connect-timeout", "2s"}
	r := runCtl(t, nil, append([]string{"regions", "--etcd-cacert", ca, "--etcd-cert", cliCert, "--etcd-key", cliKey}, conn...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "us-east") {
		t.Errorf("regions with the client certificate: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCtl(t, nil, append([]string{"regions", "--etcd-cacert", ca}, conn...)...)
	if r.code != 1 || !strings.Contains(r.stderr, "etcd 127.0.0.1:") {
		t.Errorf("regions without the client certificate: exit %d, stderr %q; want a failure naming etcd and its address", r.code, r.stderr)
	}
	r = runCtl(t, nil, append([]string{"regions", "--etcd-cacert", ca, "--etcd-cert", cliCert}, conn...)...)
	if r.code != 1 || !strings.Contains(r.stderr, "cert_file and key_file go together") {
		t.Errorf("--etcd-cert without --etcd-key: exit %d, stderr %q", r.code, r.stderr)
	}
}
