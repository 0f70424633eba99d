package deploy_test

import (
	"encoding/json"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

const (
	rulesFile     = "observability/rules.yaml"
	dashboardFile = "observability/dashboard.json"
)

// requiredAlerts are the conditions operators page on (issue 10).
var requiredAlerts = []string{
	"IdemcoordStoreUnavailable",
	"IdemcoordFencedWritesRejectedRising",
	"IdemcoordOutcomeUnknownBacklog",
	"IdemcoordOperationsStuckInProgress",
	"IdemcoordFailoverInProgress",
	"IdemcoordCleanupFallingBehind",
	"IdemcoordRegionWithoutLiveInstance",
	"IdemcoordScrapeDown",
	// A 409 downstream-window-passed leaves an operation for a person
	// (issue 29).
	"IdemcoordDownstreamWindowPassed",
}

// runbookBase is where every alert's runbook_url points: a section of
// docs/runbook.md that says what to run.
const runbookBase = "https://github.com/idemcoord/idemcoord/blob/main/docs/runbook.md#"

// promql is the parser Prometheus itself uses for rule expressions.
var promql = parser.NewParser(parser.Options{})

// TestAlertRulesParseWithPrometheus loads rules.yaml with Prometheus' own
// rule-file parser (unknown fields refused, every expression and template
// checked) and checks that each paging condition has an alert with a
// severity and a summary.
func TestAlertRulesParseWithPrometheus(t *testing.T) {
	groups, errs := rulefmt.ParseFile(rulesFile, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Errorf("rulefmt: %v", err)
	}
	if groups == nil {
		t.FailNow()
	}
	var alerts []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts = append(alerts, r.Alert)
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("alert %s: severity %q, want critical or warning", r.Alert, s)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s: want a summary and a description", r.Alert)
			}
			checkRunbook(t, r.Alert, r.Annotations["runbook_url"])
		}
	}
	for _, a := range requiredAlerts {
		if !slices.Contains(alerts, a) {
			t.Errorf("no alert %s in %s", a, rulesFile)
		}
	}
}

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	Title      string `json:"title"`
	UID        string `json:"uid"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID      int    `json:"id"`
		Title   string `json:"title"`
		Type    string `json:"type"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// grafanaVars replaces Grafana's variables with values PromQL accepts.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", `"$region"`, `".*"`)

// labelValuesRE matches a Grafana label_values(metric, label) query.
var labelValuesRE = regexp.MustCompile(`^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$`)

// metricUses returns every metric name the alert rules and the dashboard
// select, each with where it is used. Expressions are parsed with the
// PromQL parser, so a name inside a string or a comment does not count and
// a malformed dashboard query fails the test.
func metricUses(t *testing.T) map[string][]string {
	t.Helper()
	uses := map[string][]string{}
	add := func(where, expr string) {
		e, err := promql.ParseExpr(expr)
		if err != nil {
			t.Errorf("%s: PromQL %q: %v", where, expr, err)
			return
		}
		n := 0
		parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
			if vs, ok := node.(*parser.VectorSelector); ok {
				name := vs.Name
				for _, m := range vs.LabelMatchers {
					if m.Name == model.MetricNameLabel {
						name = m.Value
					}
				}
				if name == "" {
					t.Errorf("%s: a selector without a metric name: %s", where, vs)
				}
				uses[name] = append(uses[name], where)
				n++
			}
			return nil
		})
		if n == 0 {
			t.Errorf("%s: %q selects no metric", where, expr)
		}
	}

	groups, errs := rulefmt.ParseFile(rulesFile, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatalf("rulefmt: %v", errs)
	}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			add("rule "+r.Alert+r.Record, r.Expr)
		}
	}

	f, err := os.Open(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var d dashboard
	if err := json.NewDecoder(f).Decode(&d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("%s: want a title, a uid and panels", dashboardFile)
	}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			add("panel "+p.Title, grafanaVars.Replace(tg.Expr))
		}
	}
	for _, v := range d.Templating.List {
		if v.Definition == "" {
			continue
		}
		m := labelValuesRE.FindStringSubmatch(v.Definition)
		if m == nil {
			t.Errorf("variable %s: %q is not label_values(metric, label)", v.Name, v.Definition)
			continue
		}
		uses[m[1]] = append(uses[m[1]], "variable "+v.Name)
	}
	return uses
}

// semconvFamilies are the OpenTelemetry semantic conventions' histograms
// idemd exports, as the Prometheus exporter names them
// (http.server.request.duration, db.client.operation.duration).
var semconvFamilies = []string{"http_server_request_duration_seconds", "db_client_operation_duration_seconds"}

// TestDashboardAndRulesQueryIdemcoordMetrics checks that every query of the
// dashboard and the rules parses and selects only idemd's metrics: the
// idemcoord_ ones and the semantic conventions' histograms (whether idemd
// exports them is TestRulesAndDashboardMetricsAreScraped's job).
func TestDashboardAndRulesQueryIdemcoordMetrics(t *testing.T) {
	uses := metricUses(t)
	var names []string
	for name := range uses {
		names = append(names, name)
		semconv := slices.ContainsFunc(semconvFamilies, func(f string) bool { return strings.HasPrefix(name, f+"_") })
		if !strings.HasPrefix(name, "idemcoord_") && !semconv && name != "up" { // up: the scrape-down alert
			t.Errorf("%s (used by %v) is not an idemd metric", name, uses[name])
		}
	}
	sort.Strings(names)
	t.Logf("metrics used: %v", names)
}

// checkRunbook fails unless url is a section of docs/runbook.md that
// exists.
func checkRunbook(t *testing.T, alert, url string) {
	t.Helper()
	anchor, ok := strings.CutPrefix(url, runbookBase)
	if !ok || anchor == "" {
		t.Errorf("alert %s: runbook_url %q, want %sSECTION", alert, url, runbookBase)
		return
	}
	b, err := os.ReadFile("../docs/runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\n## "+anchor+"\n") {
		t.Errorf("alert %s: runbook_url names section %q, which docs/runbook.md lacks", alert, anchor)
	}
}
