package daemon_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/authn"
	"github.com/idemcoord/idemcoord/daemon"
)

// readmeMetric is one row of the metrics table in docs/runbook.md.
type readmeMetric struct {
	kind   string
	labels []string
}

// readmeMetrics parses the table under "### Metrics" in docs/runbook.md
// (it was the README's until the README became a front door).
func readmeMetrics(t *testing.T) map[string]readmeMetric {
	t.Helper()
	b, err := os.ReadFile("../docs/runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n### Metrics\n")
	if !ok {
		t.Fatal(`docs/runbook.md has no "### Metrics" section`)
	}
	section, _, _ = strings.Cut(section, "\n#")
	code := regexp.MustCompile("`([^`]+)`")
	out := map[string]readmeMetric{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !idemdFamily(strings.Trim(strings.TrimSpace(cells[1]), "`")) {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[1]), "`")
		var labels []string
		for _, m := range code.FindAllStringSubmatch(cells[3], -1) {
			labels = append(labels, m[1])
		}
		slices.Sort(labels)
		out[name] = readmeMetric{kind: strings.TrimSpace(cells[2]), labels: labels}
	}
	if len(out) == 0 {
		t.Fatal("docs/runbook.md's metrics table has no idemcoord_ rows")
	}
	return out
}

// idemdFamilies are the prefixes of the families idemd exports itself:
// its own (idemcoord_) and the OpenTelemetry semantic conventions'
// histograms, as the Prometheus exporter names http.server.request.duration
// and db.client.operation.duration.
var idemdFamilies = []string{"idemcoord_", "http_server_request_duration_seconds", "db_client_operation_duration_seconds"}

// idemdFamily reports whether name is one of idemd's own families.
func idemdFamily(name string) bool {
	return slices.ContainsFunc(idemdFamilies, func(p string) bool { return strings.HasPrefix(name, p) })
}

// scrapedFamilies returns idemd's own families of one scrape with
// their type and the labels of their series (minus the ones on every
// series), and the labels seen on every series of any family.
func scrapedFamilies(t *testing.T, addr string) (map[string]readmeMetric, []string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	fams := map[string]readmeMetric{}
	labelsOf := map[string]map[string]bool{}
	var missingRegion []string
	labelRE := regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="`)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			if idemdFamily(f[2]) {
				fams[f[2]] = readmeMetric{kind: f[3]}
				labelsOf[f[2]] = map[string]bool{}
			}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, rest, _ := strings.Cut(line, "{")
		if !strings.Contains(rest, `region="us-east"`) || !strings.Contains(rest, `service_name="idemd"`) {
			missingRegion = append(missingRegion, name)
		}
		fam := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
		if labelsOf[fam] == nil {
			continue
		}
		for _, m := range labelRE.FindAllStringSubmatch(rest, -1) {
			switch l := m[1]; {
			case l == "region", l == "service_name", l == "le", strings.HasPrefix(l, "otel_scope_"):
			default:
				labelsOf[fam][l] = true
			}
		}
	}
	for name, f := range fams {
		for l := range labelsOf[name] {
			f.labels = append(f.labels, l)
		}
		slices.Sort(f.labels)
		fams[name] = f
	}
	return fams, missingRegion
}

// TestRunbookMetricsTableMatchesScrape starts a real idemd, sends a first
// run, a replay and a passthrough, and checks docs/runbook.md's metrics table
// against /metrics: the same families of idemd's own (idemcoord_, and the
// semantic conventions' HTTP server and database client histograms), types
// and labels, and
// region and service_name on every series (runtime and process included).
func TestRunbookMetricsTableMatchesScrape(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
	}))
	defer upstream.Close()
	cfg := review2Config(t, nil)
	cfg.Upstream = upstream.URL
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := daemon.Start(ctx, cfg, daemon.Options{Logger: quiet(), Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Shutdown(context.Background())
	tok, err := authn.Issue([]byte(strings.Repeat("k", 32)), "dev", "idemcoord", authn.Principal{Tenant: "t", Subject: "u"}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/payments", "/v1/payments", "/v1/elsewhere"} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+d.Addr()+path, strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "k1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST %s: %d", path, resp.StatusCode)
		}
	}

	want := readmeMetrics(t)
	got, missingRegion := scrapedFamilies(t, d.Addr())
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("docs/runbook.md lists %s, which /metrics does not show", name)
		case g.kind != w.kind || !slices.Equal(g.labels, w.labels):
			t.Errorf("%s: docs/runbook.md says %s %v, /metrics shows %s %v", name, w.kind, w.labels, g.kind, g.labels)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("/metrics shows %s, which docs/runbook.md's table does not list", name)
		}
	}
	if len(missingRegion) > 0 {
		slices.Sort(missingRegion)
		t.Errorf("series without region and service_name labels: %v", slices.Compact(missingRegion))
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if _, ok := scrape(t, d.Addr())[name+`{region="us-east",service_name="idemd"}`]; !ok {
			t.Errorf("runtime metric %s missing or unlabelled", name)
		}
	}
}
