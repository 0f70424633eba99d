package etcdtest

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
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/idemcoord/idemcoord/internal/freeport"
)

// PKI is a throwaway certificate authority for a test: a CA valid for an
// hour around now, and the PEM files it signed, all in one directory.
type PKI struct {
	// Dir holds the CA's and every issued certificate's PEM files.
	Dir string
	// CAFile is the CA certificate's PEM file.
	CAFile string
	// CA is the CA certificate, for a client's RootCAs.
	CA *x509.Certificate

	key    *ecdsa.PrivateKey
	serial int64
}

// NewPKI creates a CA in a fresh temporary directory of t.
func NewPKI(t testing.TB) *PKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "idemcoord test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	p := &PKI{Dir: t.TempDir(), CA: ca, key: key, serial: 1}
	p.CAFile = p.Write(t, "ca.crt", "CERTIFICATE", der)
	return p
}

// CAPEM is the CA certificate in PEM.
func (p *PKI) CAPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.CA.Raw})
}

// Write writes der as a PEM block of type typ into Dir/name and returns
// the file's path.
func (p *PKI) Write(t testing.TB, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.Dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Issue signs a certificate named name for 127.0.0.1, usable as a server's
// and as a client's, and returns its certificate and key files.
func (p *PKI) Issue(t testing.TB, name string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p.serial++
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.CA, &key.PublicKey, p.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return p.Write(t, name+".crt", "CERTIFICATE", der), p.Write(t, name+".key", "EC PRIVATE KEY", kder)
}

// TLSMember starts one embedded etcd member whose client URL is https,
// served with a certificate p issues, and returns that URL. With
// clientCertAuth the member requires a client certificate signed by p's
// CA (ETCD_CLIENT_CERT_AUTH). It is stopped when the test ends.
func TLSMember(t testing.TB, p *PKI, clientCertAuth bool) string {
	t.Helper()
	cert, key := p.Issue(t, "etcd")
	ports, err := freeport.Pick(2)
	if err != nil {
		t.Fatal(err)
	}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[0])}
	client := url.URL{Scheme: "https", Host: fmt.Sprintf("127.0.0.1:%d", ports[1])}
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir = "tls", filepath.Join(t.TempDir(), "etcd")
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.InitialCluster = "tls=" + peer.String()
	cfg.ClusterState = embed.ClusterStateFlagNew
	cfg.ClientTLSInfo.CertFile, cfg.ClientTLSInfo.KeyFile = cert, key
	if clientCertAuth {
		cfg.ClientTLSInfo.TrustedCAFile, cfg.ClientTLSInfo.ClientCertAuth = p.CAFile, true
	}
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.UnsafeNoFsync, cfg.TickMs, cfg.ElectionMs = true, 10, 100
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
