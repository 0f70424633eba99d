package deploy_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/authn"
	"github.com/idemcoord/idemcoord/daemon"
	"github.com/idemcoord/idemcoord/internal/etcdtest"
	"github.com/idemcoord/idemcoord/internal/pgtest"
)

// TestMain runs the tests with a throwaway PostgreSQL and the shared embedded
// etcd (for the real Patroni cluster of the Patroni rules test).
func TestMain(m *testing.M) { etcdtest.Main(m) }

// notYetExported are the metric names the alert rules or the dashboard use
// that a real idemd does not show on /metrics yet. Each entry says what is
// missing. The list may only shrink: when idemd starts exporting a name,
// TestRulesAndDashboardMetricsAreScraped fails until it is removed here.
var notYetExported = map[string]string{}

// scrapedElsewhere are names a rule uses that this single-region scrape
// cannot show, and where they come from.
var scrapedElsewhere = map[string]string{
	"up":                              "Prometheus' own series for each scrape target",
	"idemcoord_failover_region_state": "the failover tracker's gauge (failover/metrics.go), exported in multi-region mode only",
}

// TestRulesAndDashboardMetricsAreScraped starts a real idemd (daemon.Start,
// a real PostgreSQL, the us-east overlay's endpoints, an httptest upstream),
// sends a little traffic, runs one cleanup pass as the cleanup loop does,
// scrapes /metrics and checks that every metric an alert or a dashboard
// panel uses is there, or is listed in notYetExported.
func TestRulesAndDashboardMetricsAreScraped(t *testing.T) {
	uses := metricUses(t)
	scraped := scrapeAfterTraffic(t)

	var missing, nowExported []string
	for name, where := range uses {
		if _, ok := scrapedElsewhere[name]; ok {
			continue
		}
		_, allowed := notYetExported[name]
		switch {
		case scraped[name] && allowed:
			nowExported = append(nowExported, name)
		case !scraped[name] && !allowed:
			missing = append(missing, name+" (used by "+strings.Join(where, ", ")+")")
		}
	}
	for name := range notYetExported {
		if _, used := uses[name]; !used {
			t.Errorf("notYetExported lists %s, which no rule or panel uses: remove it", name)
		}
	}
	sort.Strings(missing)
	sort.Strings(nowExported)
	for _, m := range missing {
		t.Errorf("not on /metrics after traffic: %s", m)
	}
	for _, n := range nowExported {
		t.Errorf("%s is exported now: remove it from notYetExported", n)
	}
	if t.Failed() {
		t.Logf("scraped: %v", sortedKeys(scraped))
	}
}

// scrapeAfterTraffic runs one idemd, sends a first run, a replay, a
// fingerprint conflict, an unauthenticated request and a passthrough, and
// returns the series names of one /metrics scrape.
func scrapeAfterTraffic(t *testing.T) map[string]bool {
	t.Helper()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"payment_id":"p-1","status":"succeeded"}`)
	}))
	defer upstream.Close()

	// The us-east overlay's file, pointed at the test's store and upstream,
	// in single-region mode (no etcd here).
	cfg := parseRegionConfig(t, build(t, "k8s/overlays/us-east"))
	cfg.Listen = "127.0.0.1:0"
	cfg.Upstream = upstream.URL
	cfg.WorkerID = "deploy-test"
	cfg.Store.DSN = pgtest.NewDatabase(t)
	cfg.Store.MaxConns = 4
	cfg.Etcd.Endpoints = nil
	cfg.Regions = nil
	cfg.Auth.HS256SecretFile = writeSecret(t)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := daemon.Start(ctx, cfg, daemon.Options{Logger: quietLogger(), Migrate: true})
	if err != nil {
		t.Fatalf("daemon.Start: %v", err)
	}
	defer d.Shutdown(context.Background())
	base := "http://" + d.Addr()

	secret, err := os.ReadFile(cfg.Auth.HS256SecretFile)
	if err != nil {
		t.Fatal(err)
	}
	token, err := authn.Issue([]byte(strings.TrimSuffix(string(secret), "\n")), cfg.Auth.Issuer, cfg.Auth.Audience,
		authn.Principal{Tenant: "demo", Subject: "alice"}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		method, path, key, body string
		auth                    bool
		want                    int
	}{
		{"POST", "/v1/payments", "order-1", `{"amount":"12.50"}`, true, http.StatusCreated}, // first run
		{"POST", "/v1/payments", "order-1", `{"amount":"12.50"}`, true, http.StatusCreated}, // replay
		{"POST", "/v1/payments", "order-1", `{"amount":"99.00"}`, true, 422},                // fingerprint conflict
		{"POST", "/v1/payments", "order-2", `{"amount":"1.00"}`, false, http.StatusUnauthorized},
		{"GET", "/v1/other", "", "", true, http.StatusCreated}, // passthrough
	} {
		req, err := http.NewRequestWithContext(ctx, s.method, base+s.path, strings.NewReader(s.body))
		if err != nil {
			t.Fatal(err)
		}
		if s.key != "" {
			req.Header.Set("Idempotency-Key", s.key)
		}
		if s.auth {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != s.want {
			t.Fatalf("%s %s key %q: status %d, want %d", s.method, s.path, s.key, resp.StatusCode, s.want)
		}
	}
	if _, err := d.Store().Cleanup(ctx, 100); err != nil {
		t.Fatalf("cleanup: %v", err)
	}

	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: status %d", resp.StatusCode)
	}
	names := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}
