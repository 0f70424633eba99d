package gateway_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/idemcoord/idemcoord/gateway"
)

// lockedBuffer is a log sink shared by two gateways.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// forwardedCounts returns idemcoord.forwarded by "to/result".
func forwardedCounts(t *testing.T, r *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "idemcoord.forwarded" {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				to, _ := dp.Attributes.Value(attribute.Key("to"))
				res, _ := dp.Attributes.Value(attribute.Key("result"))
				got[to.AsString()+"/"+res.AsString()] += dp.Value
			}
		}
	}
	return got
}

func TestRoutingIsCountedAndLogsNoKeyBodyOrToken(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { provider.Shutdown(context.Background()) })
	var logs lockedBuffer
	s := openStore(t, 8)
	east, west := startRegions(t, s, "east", regionsOptions{meter: provider.Meter("test"),
		logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	alice := token(t, "alice")
	const key, body = "secret-key-0042", `{"card":"4111111111111111"}`

	if st, h, b := do(t, post(t, west.url+"/v1/things", alice, key, body)); st != http.StatusCreated {
		t.Fatalf("forwarded: %s", describe(st, h, b))
	}
	east.owners.set(actorShard, "west", 1, gateway.ShardActive) // now both views are stale
	west.owners.set(actorShard, "east", 1, gateway.ShardActive)
	if st, h, b := do(t, post(t, east.url+"/v1/things", alice, key+"-loop", body)); st != http.StatusServiceUnavailable {
		t.Fatalf("loop: %s", describe(st, h, b))
	}

	got := forwardedCounts(t, reader)
	// The first request went west -> east; the second east -> west, whose
	// refusal is east's answer, and west counts the loop it refused.
	want := map[string]int64{"east/answered": 1, "west/answered": 1, "east/loop_refused": 1}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("idemcoord.forwarded{%s} = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
	out := logs.String()
	if !strings.Contains(out, "forwarded request for a shard this region does not own") {
		t.Errorf("the refused loop was not logged:\n%s", out)
	}
	for _, secret := range []string{key, "4111111111111111", strings.TrimPrefix(alice, "Bearer ")} {
		if strings.Contains(out, secret) {
			t.Errorf("logs carry %q:\n%s", secret, out)
		}
	}
}
