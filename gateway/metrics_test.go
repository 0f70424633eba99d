package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/idemcoord/idemcoord/gateway"
)

// requestCounts returns the int64 counter name's non-zero points as
// "endpoint/label" (label: the point's other attribute) and the count of
// idemcoord.http.duration's points by the same key.
func requestCounts(t *testing.T, r *sdkmetric.ManualReader, name, label string) (counts, durations map[string]int64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	counts, durations = map[string]int64{}, map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch m.Name {
			case name:
				for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
					ep, _ := dp.Attributes.Value("endpoint")
					v, _ := dp.Attributes.Value(attribute.Key(label))
					if dp.Value != 0 {
						counts[ep.AsString()+"/"+v.AsString()] = dp.Value
					}
				}
			case "idemcoord.http.duration":
				for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
					ep, _ := dp.Attributes.Value("endpoint")
					v, _ := dp.Attributes.Value("result")
					durations[ep.AsString()+"/"+v.AsString()] = int64(dp.Count)
				}
			}
		}
	}
	return counts, durations
}

// TestRequestMetricsCountEachAnswerByEndpointAndResult: every answer is
// counted once in idemcoord.http.requests and idemcoord.http.duration under
// its endpoint and result, whether the result is one the gateway exports
// at zero from the start (first_run, replay, missing_key, passthrough) or
// not (first_sent_refused), and the upstream's answer once in
// idemcoord.upstream.results under its state.
func TestRequestMetricsCountEachAnswerByEndpointAndResult(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"1"}`)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	g, err := gateway.New(gateway.Config{Region: "test", Worker: "w", Store: openStore(t, 4), Auth: verifier(t),
		Endpoints: endpoints(t, ""), Next: gateway.NewProxy(u, nil), Meter: mp.Meter("test")})
	srv := served(t, g, err)
	alice := token(t, "alice")
	for range 2 { // a first run, then its replay
		if code, h, b := do(t, post(t, srv.URL+"/v1/things", alice, "metered-1", `{}`)); code != http.StatusCreated {
			t.Fatalf("POST: %s", describe(code, h, b))
		}
	}
	if code, h, b := do(t, post(t, srv.URL+"/v1/things", alice, "", `{}`)); code != http.StatusBadRequest {
		t.Fatalf("POST without a key: %s, want 400", describe(code, h, b))
	}
	refused := post(t, srv.URL+"/v1/things", alice, "metered-2", `{}`)
	refused.Header.Set(gateway.HeaderFirstSent, "not a time")
	if code, h, b := do(t, refused); code != http.StatusBadRequest {
		t.Fatalf("POST with a malformed first-sent time: %s, want 400", describe(code, h, b))
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/elsewhere", nil)
	if code, h, b := do(t, req); code != http.StatusCreated {
		t.Fatalf("GET elsewhere: %s, want the upstream's 201", describe(code, h, b))
	}

	want := map[string]int64{"create-thing/first_run": 1, "create-thing/replay": 1, "create-thing/missing_key": 1,
		"create-thing/first_sent_refused": 1, "(unmatched)/passthrough": 1}
	counts, durations := requestCounts(t, reader, "idemcoord.http.requests", "result")
	if !equalCounts(counts, want) {
		t.Errorf("idemcoord.http.requests %v, want %v", counts, want)
	}
	if !equalCounts(durations, want) {
		t.Errorf("idemcoord.http.duration counts %v, want %v", durations, want)
	}
	upstream, _ := requestCounts(t, reader, "idemcoord.upstream.results", "state")
	if want := map[string]int64{"create-thing/COMPLETED": 1}; !equalCounts(upstream, want) {
		t.Errorf("idemcoord.upstream.results %v, want %v", upstream, want)
	}
}

func equalCounts(got, want map[string]int64) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}
