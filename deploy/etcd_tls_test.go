package deploy_test

import (
	"context"
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
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// etcdTLSChildEnv names the variable that makes the test binary act as
// the etcd client of TestIdemdTrustsTheEtcdCAFromSSLCertDir. A child
// process is needed because Go loads the system trust store, and reads
// SSL_CERT_DIR, once per process.
const etcdTLSChildEnv = "IDEMCOORD_DEPLOY_ETCD_TLS_ENDPOINT"

// TestIdemdTrustsTheEtcdCAFromSSLCertDir checks what deploy/k8s relies on
// until idemd has etcd TLS settings: an etcd client configured the way the
// daemon configures it (endpoints and a dial timeout, nothing else)
// verifies an https:// member against a CA found through SSL_CERT_DIR, and
// refuses the member when the CA is not there.
func TestIdemdTrustsTheEtcdCAFromSSLCertDir(t *testing.T) {
	if ep := os.Getenv(etcdTLSChildEnv); ep != "" {
		// The child: connect as daemon.joinEtcd does, and make one read.
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatalf("clientv3.New: %v", err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := c.Get(ctx, "/idemcoord/probe"); err != nil {
			t.Fatalf("get over TLS: %v", err)
		}
		return
	}

	dir := t.TempDir()
	caDir, emptyDir := filepath.Join(dir, "etcd-ca"), filepath.Join(dir, "empty")
	for _, d := range []string{caDir, emptyDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	certFile, keyFile := writeTestPKI(t, caDir, dir)
	endpoint := startTLSEtcd(t, filepath.Join(dir, "data"), certFile, keyFile)

	for _, tc := range []struct {
		name     string
		certDir  string
		connects bool
	}{
		{"CA in SSL_CERT_DIR", caDir, true},
		{"CA absent", emptyDir, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestIdemdTrustsTheEtcdCAFromSSLCertDir$", "-test.count=1")
			cmd.Env = append(os.Environ(), etcdTLSChildEnv+"="+endpoint, "SSL_CERT_DIR="+tc.certDir)
			out, err := cmd.CombinedOutput()
			if got := err == nil; got != tc.connects {
				t.Errorf("client connected = %v, want %v; output:\n%s", got, tc.connects, out)
			}
		})
	}
}

// writeTestPKI writes a CA certificate into caDir, laid out as a mounted
// Secret volume, and a server certificate
// for 127.0.0.1 signed by it into dir, returning the server's files.
func writeTestPKI(t *testing.T, caDir, dir string) (certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "idemcoord test etcd CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srvTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "etcd"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	// The layout the kubelet gives a Secret volume: the key is a symlink
	// through ..data into a timestamped directory.
	ts := filepath.Join(caDir, "..2026_01_01_00_00_00.000000001")
	if err := os.Mkdir(ts, 0o700); err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(ts, "ca.crt"), "CERTIFICATE", caDER)
	if err := os.Symlink(filepath.Base(ts), filepath.Join(caDir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..data/ca.crt", filepath.Join(caDir, "ca.crt")); err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	writePEM(t, certFile, "CERTIFICATE", srvDER)
	writePEM(t, keyFile, "EC PRIVATE KEY", keyDER)
	return certFile, keyFile
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// startTLSEtcd starts one embedded etcd member whose client URL is https
// with the given certificate, and returns that URL.
func startTLSEtcd(t *testing.T, dataDir, certFile, keyFile string) string {
	t.Helper()
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
	cfg.Name = "tls"
	cfg.Dir = dataDir
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.InitialCluster = "tls=" + peer.String()
	cfg.ClusterState = embed.ClusterStateFlagNew
	cfg.ClientTLSInfo.CertFile, cfg.ClientTLSInfo.KeyFile = certFile, keyFile
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.UnsafeNoFsync = true
	cfg.TickMs, cfg.ElectionMs = 10, 100
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("embedded etcd: %v", err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatalf("embedded etcd: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("embedded etcd not ready after 30s")
	}
	return client.String()
}
