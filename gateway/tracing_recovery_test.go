package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/gateway"
)

// TestARecoveredRunIsTracedWhenTracingIsOn: async work a live instance
// recovers from a dead one runs outside any request, so its context
// carries no span. With a provider that records, its upstream call and its
// finish are still spans, and the upstream gets their trace context: only
// a request that is itself outside any trace skips them.
func TestARecoveredRunIsTracedWhenTracingIsOn(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(t.Context())

	var mu sync.Mutex
	var traceparents []string
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/things", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		traceparents = append(traceparents, r.Header.Get("traceparent"))
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	})
	mux.HandleFunc("GET /internal/operations/{id}", http.NotFound) // the dead instance never sent it
	up := httptest.NewServer(mux)
	defer up.Close()
	u, _ := url.Parse(up.URL)

	lease := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	s := storeOnClock(t, lease, 16)
	eps := endpoints(t, asyncEndpoint)
	srvA, dead := deadInstance(t, s, eps, lease.Now())

	recoveryClock := clock.NewFake(lease.Now())
	b, err := gateway.New(gateway.Config{Region: "test", Worker: "live", Store: s, Auth: verifier(t),
		Endpoints: eps, Next: gateway.NewProxy(u, nil), TracerProvider: tp,
		Recovery: gateway.RecoveryConfig{Clock: recoveryClock, Interval: 5 * time.Second}})
	srvB := served(t, b, err)

	alice := token(t, "alice")
	code, h, body := do(t, post(t, srvA.URL+"/v1/things", alice, "traced-recovery", `{}`))
	if code != http.StatusAccepted {
		t.Fatalf("first: %s", describe(code, h, body))
	}
	id := h.Get(gateway.HeaderOperationID)
	<-dead.entered
	lease.Advance(31 * time.Second)
	recoveryClock.Advance(5 * time.Second)
	if st := operationState(t, srvB.URL, alice, id, "COMPLETED", 10*time.Second); st != "COMPLETED" {
		t.Fatalf("recovered task: state %q, want COMPLETED", st)
	}

	var names []string
	var upstreamSpan string
	for _, sp := range exp.GetSpans() {
		names = append(names, label(sp))
		if sp.Name == gateway.SpanUpstream {
			upstreamSpan = "00-" + sp.SpanContext.TraceID().String() + "-" + sp.SpanContext.SpanID().String() + "-01"
			if got := attr(sp, gateway.AttrOperationID); got != id {
				t.Errorf("upstream span operation id %q, want %q", got, id)
			}
		}
	}
	for _, want := range []string{gateway.SpanUpstream, "db:finish"} {
		if !slices.Contains(names, want) {
			t.Errorf("spans of the recovered run %q: no %s", names, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(traceparents) != 1 || traceparents[0] == "" || traceparents[0] != upstreamSpan {
		t.Errorf("the recovered run reached the upstream with traceparents %q, want [%q] (its upstream span)", traceparents, upstreamSpan)
	}
}
