package gateway_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/idemcoord/idemcoord/gateway"
)

// shadowCounts returns idemcoord.shadow.decisions by "would".
func shadowCounts(t *testing.T, r *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "idemcoord.shadow.decisions" {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				w, _ := dp.Attributes.Value(attribute.Key("would"))
				got[w.AsString()] += dp.Value
			}
		}
	}
	return got
}

func TestShadowModePassesEveryRacerUpstreamAndCountsWhatEnforcementWouldHaveDone(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { provider.Shutdown(context.Background()) })
	var logs lockedBuffer
	var runs atomic.Int64
	g, err := gateway.Wrap(gateway.Config{Region: "test", Worker: "w", Store: openStore(t, 16), Auth: verifier(t),
		Endpoints: endpoints(t, "    mode: shadow\n"),
		Meter:     provider.Meter("test"), Logger: slog.New(slog.NewTextHandler(&logs, nil))}, countingHandler(&runs))
	if err != nil {
		t.Fatal(err)
	}
	startGateway(t, g)
	t.Cleanup(func() { g.Close() })
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	alice := token(t, "alice")
	const racers, key, body = 64, "shadow-key-0001", `{"card":"4111111111111111"}`

	var wg sync.WaitGroup
	statuses := make([]int, racers)
	replayed := make([]string, racers)
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, h, _ := do(t, post(t, srv.URL+"/v1/things", alice, key, body))
			statuses[i], replayed[i] = status, h.Get(gateway.HeaderReplayed)
		}()
	}
	wg.Wait()
	for i := range racers {
		if statuses[i] != http.StatusCreated || replayed[i] != "" {
			t.Fatalf("racer %d: status %d, replayed %q; want the upstream's own 201 for every racer", i, statuses[i], replayed[i])
		}
	}
	if got := runs.Load(); got != racers {
		t.Fatalf("upstream ran %d times, want %d (every racer, as without the gateway)", got, racers)
	}
	// A different body under the key: enforcement would answer 422.
	if status, _, _ := do(t, post(t, srv.URL+"/v1/things", alice, key, `{"card":"5500000000000004"}`)); status != http.StatusCreated {
		t.Fatalf("mismatched body: %d, want the upstream's 201", status)
	}
	got := shadowCounts(t, reader)
	if sum := got["would_replay"] + got["would_409"]; sum != racers-1 {
		t.Fatalf("would-be replays and in-progress hits %v sum to %d, want %d", got, sum, racers-1)
	}
	if got["would_422"] != 1 {
		t.Fatalf("would_422 = %d, want 1 (%v)", got["would_422"], got)
	}
	for _, leak := range []string{key, body, "4111111111111111", alice[len("Bearer "):]} {
		if strings.Contains(logs.String(), leak) {
			t.Fatalf("logs contain %q", leak)
		}
	}
	if !bytes.Contains([]byte(logs.String()), []byte("would=would_")) {
		t.Fatalf("logs do not say what enforcement would have done:\n%s", logs.String())
	}
}
