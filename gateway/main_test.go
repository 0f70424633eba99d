package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/authn"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var secret = []byte("0123456789abcdef0123456789abcdef-test-secret")

const (
	issuer   = "test"
	audience = "idemcoord"
)

func verifier(t testing.TB) *authn.Verifier {
	t.Helper()
	v, err := authn.NewVerifier(authn.Config{Issuer: issuer, Audience: audience, HS256Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func token(t testing.TB, subject string) string {
	t.Helper()
	tok, err := authn.Issue(secret, issuer, audience, authn.Principal{Tenant: "t", Subject: subject}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return "Bearer " + tok
}

// openStore opens a migrated store of maxConns connections whose shards
// all belong to region "test".
//
// It runs with the store's production defaults (sqlstore.DefaultConfig:
// group commit on, as in idemd), so concurrent tests and the benchmarks
// see the statements idemd sends.
func openStore(t testing.TB, maxConns int32) *sqlstore.Store {
	t.Helper()
	cfg := sqlstore.DefaultConfig()
	cfg.Migrate, cfg.DSN, cfg.MaxConns = true, pgtest.NewDatabase(t), maxConns
	s, err := sqlstore.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	bootstrap(t, s)
	return s
}

// bootstrap gives every shard of s to region "test" (an unowned shard
// admits nobody).
func bootstrap(t testing.TB, s *sqlstore.Store) {
	t.Helper()
	if err := s.BootstrapFences(context.Background(), shard.DefaultCount, func(int) string { return "test" }); err != nil {
		t.Fatal(err)
	}
}

// endpoints parses one coordinated endpoint the way a config file would.
func endpoints(t testing.TB, extra string) []config.Endpoint {
	t.Helper()
	os.Setenv("GATEWAY_TEST_SECRET", string(secret))
	timeout := "    upstream_timeout: 5s\n"
	if strings.Contains(extra, "upstream_timeout:") {
		timeout = ""
	}
	cfg, err := config.Parse([]byte(`region: test
listen: 127.0.0.1:0
upstream: http://127.0.0.1:1
store: {dsn: "postgres://x"}
auth: {issuer: test, audience: idemcoord, hs256_secret_env: GATEWAY_TEST_SECRET}
endpoints:
  - name: create-thing
    method: POST
    path: /v1/things
    key: required
` + timeout + extra))
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Endpoints
}

func post(t testing.TB, url, auth, key, body string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(http.MethodPost, url, stringsReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Authorization", auth)
	r.Header.Set("Content-Type", "application/json")
	if key != "" {
		r.Header.Set("Idempotency-Key", key)
	}
	return r
}

// serveWrapped serves h coordinated by a test gateway (region "test") with
// one endpoint configured by extra, both closed when the test ends.
func serveWrapped(t testing.TB, s store.Store, extra string, h http.Handler) *httptest.Server {
	t.Helper()
	_, srv := serveConfig(t, gateway.Config{Region: "test", Worker: "w", Store: s, Auth: verifier(t),
		Endpoints: endpoints(t, extra)}, h)
	return srv
}
