package deploy_test

import (
	"bufio"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/idemcoord/idemcoord/internal/patronilocal"
	"github.com/idemcoord/idemcoord/internal/patronitest"
)

// patroniRulesFile holds the alerts on the store's Patroni clusters.
const patroniRulesFile = "observability/patroni-rules.yaml"

// requiredPatroniAlerts are the store conditions operators page on (issue
// 25 item 7).
var requiredPatroniAlerts = []string{
	"PatroniNoPrimary",
	"PatroniNoSynchronousStandby",
	"PatroniReplicationLag",
	"PatroniPrimaryChanged",
}

// patroniRuleMetrics parses the Patroni rule file with Prometheus' own
// parser, checks each alert's severity, annotations and runbook section,
// and returns every metric name its expressions select.
func patroniRuleMetrics(t *testing.T) map[string][]string {
	t.Helper()
	groups, errs := rulefmt.ParseFile(patroniRulesFile, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Errorf("rulefmt: %v", err)
	}
	if groups == nil {
		t.FailNow()
	}
	uses := map[string][]string{}
	var alerts []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("alert %s: severity %q, want critical or warning", r.Alert, s)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s: want a summary and a description", r.Alert)
			}
			checkRunbook(t, r.Alert, r.Annotations["runbook_url"])
			e, err := promql.ParseExpr(r.Expr)
			if err != nil {
				t.Fatalf("alert %s: %v", r.Alert, err)
			}
			parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
				if vs, ok := node.(*parser.VectorSelector); ok {
					uses[vs.Name] = append(uses[vs.Name], r.Alert)
				}
				return nil
			})
		}
	}
	for _, a := range requiredPatroniAlerts {
		if !slices.Contains(alerts, a) {
			t.Errorf("no alert %s in %s", a, patroniRulesFile)
		}
	}
	return uses
}

// TestPatroniAlertRulesParseWithPrometheus checks the Patroni rule file
// with Prometheus' rule-file parser and that it selects only Patroni's
// own metrics (never an idemcoord_ one: those are rules.yaml's).
func TestPatroniAlertRulesParseWithPrometheus(t *testing.T) {
	for name, where := range patroniRuleMetrics(t) {
		if !strings.HasPrefix(name, "patroni_") {
			t.Errorf("%s (used by %v) is not a Patroni metric", name, where)
		}
	}
}

// TestPatroniRulesMetricsAreOnARealPatroni starts a real three-member
// Patroni 4 cluster (internal/patronitest in quorum commit, strict, as
// deploy/patroni runs it, on the test binary's embedded etcd), scrapes
// every member's REST /metrics and checks that every metric the Patroni
// rules select is there, with the scope and name labels the rules join
// on, and that the healthy cluster shows what the rules expect of one:
// one primary, both standbys quorum standbys.
func TestPatroniRulesMetricsAreOnARealPatroni(t *testing.T) {
	uses := patroniRuleMetrics(t)
	c := patronitest.Start(t, patronitest.WithConfig(func(c *patronilocal.Config) { c.Quorum = true }))

	// A replica reports patroni_quorum_standby from its own view of the
	// DCS's /sync key, refreshed every HA loop: scrape until the members
	// agree with what Start waited for (a bounded number of loops).
	var scraped map[string]bool
	var sum map[string]float64
	deadline := time.Now().Add(time.Minute)
	for {
		scraped, sum = map[string]bool{}, map[string]float64{}
		for _, rest := range c.RESTURLs() {
			for _, s := range scrapePatroni(t, rest+"/metrics") {
				scraped[s.name] = true
				if s.labels["scope"] != c.Scope() || s.labels["name"] == "" {
					t.Errorf("%s: %s has labels %v, want scope=%q and name", rest, s.name, s.labels, c.Scope())
				}
				sum[s.name] += s.value
			}
		}
		if sum["patroni_quorum_standby"] == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	var missing []string
	for name, where := range uses {
		if !scraped[name] {
			missing = append(missing, name+" (used by "+strings.Join(where, ", ")+")")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("not on a real Patroni's /metrics: %s", m)
	}
	if sum["patroni_primary"] != 1 || sum["patroni_quorum_standby"] != 2 || sum["patroni_sync_standby"] != 0 || sum["patroni_cluster_unlocked"] != 0 {
		t.Errorf("healthy cluster: patroni_primary %v, patroni_quorum_standby %v, patroni_sync_standby %v, patroni_cluster_unlocked %v summed over the members; want 1, 2, 0, 0",
			sum["patroni_primary"], sum["patroni_quorum_standby"], sum["patroni_sync_standby"], sum["patroni_cluster_unlocked"])
	}
}

// patroniSampleRE matches one sample line of Patroni's /metrics: a name,
// its labels and the value (Patroni writes every series with labels).
var patroniSampleRE = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}\s+(\S+)$`)

// patroniLabelRE matches one label of a sample.
var patroniLabelRE = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"`)

// patroniSample is one series of a Patroni /metrics page.
type patroniSample struct {
	name   string
	labels map[string]string
	value  float64
}

// scrapePatroni reads one Patroni /metrics page; a sample line that does
// not parse fails the test.
func scrapePatroni(t *testing.T, url string) []patroniSample {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d", url, resp.StatusCode)
	}
	var out []patroniSample
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := patroniSampleRE.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("%s: cannot parse %q", url, line)
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Fatalf("%s: %q: %v", url, line, err)
		}
		s := patroniSample{name: m[1], labels: map[string]string{}, value: v}
		for _, l := range patroniLabelRE.FindAllStringSubmatch(m[2], -1) {
			s.labels[l[1]] = l[2]
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
