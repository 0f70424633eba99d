package daemon_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/authn"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/daemon"
	"github.com/idemcoord/idemcoord/internal/etcdtest"
)

// TestTLSListenerUpstreamAndEtcdClientCert serves HTTPS, reaches an https
// upstream through upstream_tls.ca_file, and joins an etcd that requires
// client certificates through etcd.tls; without the client certificate
// the start fails.
func TestTLSListenerUpstreamAndEtcdClientCert(t *testing.T) {
	p := etcdtest.NewPKI(t)
	etcdURL := etcdtest.TLSMember(t, p, true)
	upstream := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
	}))
	defer upstream.Close()
	upstreamCA := p.Write(t, "upstream.crt", "CERTIFICATE", upstream.Certificate().Raw)
	srvCert, srvKey := p.Issue(t, "idemd")
	clientCert, clientKey := p.Issue(t, "idemd-client")

	cfg := review2Config(t, []string{etcdURL})
	cfg.Upstream = upstream.URL
	cfg.TLS = config.ListenerTLS{CertFile: srvCert, KeyFile: srvKey}
	cfg.UpstreamTLS = config.UpstreamTLS{CAFile: upstreamCA}
	cfg.Etcd.TLS = config.EtcdTLS{CAFile: p.CAFile, CertFile: clientCert, KeyFile: clientKey}
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
	roots.AddCert(p.CA)
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
	noCert.Etcd.TLS = config.EtcdTLS{CAFile: p.CAFile}
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	if d2, err := daemon.Start(sctx, noCert, daemon.Options{Logger: quiet(), Migrate: true}); err == nil {
		d2.Shutdown(context.Background())
		t.Error("Start without a client certificate joined an etcd that requires one")
	}
}
