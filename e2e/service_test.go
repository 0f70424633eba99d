package e2e

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/devcluster"
)

// Metric names as the Prometheus exporter spells the gateway's and the
// store's OpenTelemetry instruments (idemcoord.http.requests,
// idemcoord.decisions and idemcoord.events; counters get _total).
const (
	metricRequests  = "idemcoord_http_requests_total"
	metricDecisions = "idemcoord_decisions_total"
	metricEvents    = "idemcoord_events_total"
	// The OpenTelemetry semantic conventions' histograms
	// (http.server.request.duration, db.client.operation.duration), as
	// the exporter writes their sample counts.
	metricHTTPServer = "http_server_request_duration_seconds_count"
	metricDBClient   = "db_client_operation_duration_seconds_count"
)

// TestServiceEndpoints checks what operators and load balancers rely on:
// /healthz and /readyz answer 200 in every region, and after a first run
// and a replay, /metrics counts both in the request counter (result label)
// and in the store's outcome counter (outcome label), and in the semantic
// conventions' histograms: http_server_request_duration_seconds by the
// endpoint's route template, db_client_operation_duration_seconds by the
// store call (a claim each).
func TestServiceEndpoints(t *testing.T) {
	c := sharedCluster(t)
	ctx, cancel := context.WithTimeout(t.Context(), requestTimeout)
	defer cancel()
	for _, region := range c.Regions {
		for _, path := range []string{"/healthz", "/readyz"} {
			r, err := send(ctx, http.MethodGet, region.URL+path, "", nil, nil)
			if err != nil || r.Status != http.StatusOK {
				t.Errorf("%s GET %s: %v %v; want 200", region.Name, path, r, err)
			}
		}
	}

	region := c.Regions[1]
	before := scrape(t, region.URL)
	tok := token(t, c, c.ActorHomedIn(region.Name, uniqueName("metrics")))
	key := uniqueName("metrics-key")
	body := paymentBody("3.00", "order-metrics")
	if r := mustPost(t, region.URL, tok, key, body); r.Status != http.StatusCreated || r.replayed() {
		t.Fatalf("first run: %v", r)
	}
	if r := mustPost(t, region.URL, tok, key, body); r.Status != http.StatusCreated || !r.replayed() {
		t.Fatalf("retry: %v; want a replay", r)
	}
	after := scrape(t, region.URL)
	for _, m := range []struct{ name, label string }{
		{metricRequests, `result="first_run"`},
		{metricRequests, `result="replay"`},
		{metricDecisions, `decision="first_run"`},
		{metricDecisions, `decision="replay"`},
	} {
		was, now := before.sum(m.name, m.label, `endpoint="create-payment"`), after.sum(m.name, m.label, `endpoint="create-payment"`)
		if now-was < 1 {
			t.Errorf("%s{%s} went from %v to %v; want it to grow by at least 1", m.name, m.label, was, now)
		}
	}
	for _, m := range []struct {
		name   string
		labels []string
	}{
		{metricHTTPServer, []string{`http_request_method="POST"`, `http_route="/v1/payments"`, `http_response_status_code="201"`, `url_scheme="http"`}},
		{metricDBClient, []string{`db_operation_name="claim"`, `db_system_name="postgresql"`}},
	} {
		was, now := before.sum(m.name, m.labels...), after.sum(m.name, m.labels...)
		if now-was < 2 {
			t.Errorf("%s%v went from %v to %v; want it to grow by at least 2 (the first run and the replay)", m.name, m.labels, was, now)
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", after.text)
	}
}

// sumMetric sums a metric's matching samples over every region of c.
func sumMetric(t *testing.T, c *devcluster.Cluster, name string, labels ...string) float64 {
	t.Helper()
	var total float64
	for _, r := range c.Regions {
		total += scrape(t, r.URL).sum(name, labels...)
	}
	return total
}

// exposition is one /metrics scrape in the Prometheus text format.
type exposition struct{ text []byte }

func scrape(t *testing.T, base string) exposition {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), requestTimeout)
	defer cancel()
	r, err := send(ctx, http.MethodGet, base+"/metrics", "", nil, nil)
	if err != nil || r.Status != http.StatusOK {
		t.Fatalf("GET /metrics: %v %v", r, err)
	}
	return exposition{r.Body}
}

// sum adds the samples of metric name whose labels contain every one of
// labels (name="value" pairs).
func (e exposition) sum(name string, labels ...string) float64 {
	var total float64
	sc := bufio.NewScanner(bytes.NewReader(e.text))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		series, value, ok := strings.Cut(line[len(name):], " ")
		if !ok {
			continue
		}
		match := true
		for _, l := range labels {
			match = match && strings.Contains(series, l)
		}
		if v, err := strconv.ParseFloat(strings.Fields(value)[0], 64); match && err == nil {
			total += v
		}
	}
	return total
}
