package daemon_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/idemcoord/idemcoord/authn"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/daemon"
)

// testPKI is a CA and the PEM files it signed, in one directory.
type testPKI struct {
	dir    string
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caFile string
	serial int64
}

func newPKI(t *testing.T) *testPKI {
	t.Helper()
	p := &testPKI{dir: t.TempDir(), serial: 1}
	var err error
	if p.caKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &p.caKey.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	p.ca, _ = x509.ParseCertificate(der)
	p.caFile = p.write(t, "ca.crt", "CERTIFICATE", der)
	return p
}

func (p *testPKI) write(t *testing.T, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// issue signs a certificate for 127.0.0.1 usable as server and client.
func (p *testPKI) issue(t *testing.T, name string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p.serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return p.write(t, name+".crt", "CERTIFICATE", der), p.write(t, name+".key", "EC PRIVATE KEY", kder)
}

// startMTLSEtcd runs one etcd member whose client port requires a client
// certificate signed by p's CA.
func startMTLSEtcd(t *testing.T, p *testPKI) string {
	t.Helper()
	cert, key := p.issue(t, "etcd")
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
	cfg.Name, cfg.Dir = "mtls", filepath.Join(t.TempDir(), "data")
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.InitialCluster = "mtls=" + peer.String()
	cfg.ClusterState = embed.ClusterStateFlagNew
	cfg.ClientTLSInfo.CertFile, cfg.ClientTLSInfo.KeyFile = cert, key
	cfg.ClientTLSInfo.TrustedCAFile, cfg.ClientTLSInfo.ClientCertAuth = p.caFile, true
	cfg.TickMs, cfg.ElectionMs, cfg.UnsafeNoFsync = 10, 100, true
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatal(err)
	case <-time.After(30 * time.Second):
		t.Fatal("etcd not ready")
	}
	return client.String()
}

// TestTLSListenerUpstreamAndEtcdClientCert serves HTTPS, reaches an https
// upstream through upstream_tls.ca_file, and joins an etcd that requires
// client certificates through etcd.tls; without the client certificate
// the start fails.
func TestTLSListenerUpstreamAndEtcdClientCert(t *testing.T) {
	p := newPKI(t)
	etcdURL := startMTLSEtcd(t, p)
	upstream := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
	}))
	defer upstream.Close()
	upstreamCA := p.write(t, "upstream.crt", "CERTIFICATE", upstream.Certificate().Raw)
	srvCert, srvKey := p.issue(t, "idemd")
	clientCert, clientKey := p.issue(t, "idemd-client")

	cfg := review2Config(t, []string{etcdURL})
	cfg.Upstream = upstream.URL
	cfg.TLS = config.ListenerTLS{CertFile: srvCert, KeyFile: srvKey}
	cfg.UpstreamTLS = config.UpstreamTLS{CAFile: upstreamCA}
	cfg.Etcd.TLS = config.EtcdTLS{CAFile: p.caFile, CertFile: clientCert, KeyFile: clientKey}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := daemon.Start(ctx, cfg, daemon.Options{Logger: quiet(), Migrate: true})
	if err != nil {
		t.Fatalf("Start with etcd client certificate: %v", err)
	}
	defer d.Shutdown(context.Background())

	roots := x509.NewCertPool()
	roots.AddCert(p.ca)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	resp, err := client.Get("https://" + d.Addr() + "/readyz")
	if err != nil {
		t.Fatalf("HTTPS /readyz: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTPS /readyz: %d", resp.StatusCode)
	}
	tok, _ := authn.Issue([]byte(strings.Repeat("k", 32)), "dev", "idemcoord", authn.Principal{Tenant: "t", Subject: "u"}, time.Hour, time.Now())
	req, _ := http.NewRequest(http.MethodPost, "https://"+d.Addr()+"/v1/payments", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "tls-1")
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("request through the https upstream: %d, want 201", resp.StatusCode)
	}
	noCert := review2Config(t, []string{etcdURL})
	noCert.Etcd.TLS = config.EtcdTLS{CAFile: p.caFile}
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	if d2, err := daemon.Start(sctx, noCert, daemon.Options{Logger: quiet(), Migrate: true}); err == nil {
		d2.Shutdown(context.Background())
		t.Error("Start without a client certificate joined an etcd that requires one")
	}
}
