package gateway_test

import (
	"net/http"
	"slices"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemcoord/idemcoord/gateway"
)

// TestAWaitedRetryIsTracedAsTheReplayItAnswers: a retry that waited for
// the run in flight and was answered with the run's recorded answer (read
// by the shared watch, without a claim of its own) says so on its request
// span: decision replay, as a claim replaying it would have said, not the
// in_progress its first claim found.
func TestAWaitedRetryIsTracedAsTheReplayItAnswers(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(t.Context())
	s, fake := clockedStore(t, 4)
	up := newHeldRun(t)
	t.Cleanup(up.free)
	g, srv := serveConfig(t, gateway.Config{Region: "test", Worker: "w", Store: s, Auth: verifier(t),
		Endpoints: endpoints(t, "    lease: 30s\n    in_progress: {wait: 30s}\n"), Clock: fake, TracerProvider: tp}, up)
	first, retries := heldWithWaiters(t, g, srv, up, token(t, "alice"), 1)
	up.free()
	if f := <-first; f.status != http.StatusCreated {
		t.Fatalf("first run: %d %s", f.status, f.body)
	}
	if r := <-retries[0]; r.status != http.StatusCreated || r.header.Get(gateway.HeaderReplayed) != "true" {
		t.Fatalf("waited retry: %d %q, want the run's 201 replayed", r.status, r.body)
	}
	var decisions []string
	for _, sp := range exp.GetSpans() {
		if sp.SpanKind == trace.SpanKindServer {
			decisions = append(decisions, attr(sp, gateway.AttrDecision))
		}
	}
	slices.Sort(decisions)
	if want := []string{"first_run", "replay"}; !slices.Equal(decisions, want) {
		t.Errorf("decisions on the request spans %q, want %q", decisions, want)
	}
}
