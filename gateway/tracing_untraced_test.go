package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"

	"github.com/idemcoord/idemcoord/gateway"
)

// countingProvider is a TracerProvider that records the names of the spans
// started through it and hands them to tp (here the global provider with
// nothing set, what gateway.New takes by default: its spans record nothing
// and carry the parent's context on).
type countingProvider struct {
	embedded.TracerProvider
	tp    trace.TracerProvider
	mu    *sync.Mutex
	spans *[]string
}

func (p countingProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return countingTracer{t: p.tp.Tracer(name, opts...), p: p}
}

type countingTracer struct {
	embedded.Tracer
	t trace.Tracer
	p countingProvider
}

func (t countingTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	t.p.mu.Lock()
	*t.p.spans = append(*t.p.spans, name)
	t.p.mu.Unlock()
	return t.t.Start(ctx, name, opts...)
}

// TestARequestOutsideAnyTraceStartsNoPipelineSpans: with a provider that
// records nothing (the global default) and a client that sends no trace
// context, the store's and upstream spans would record nothing and
// carry nothing upstream: they are not started. A client's traceparent
// still gets them, and reaches the upstream.
func TestARequestOutsideAnyTraceStartsNoPipelineSpans(t *testing.T) {
	const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	var mu sync.Mutex
	var got []string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		got = append(got, r.Header.Get("traceparent"))
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	defer upstream.Close()
	u, _ := url.Parse(upstream.URL)
	var spans []string
	tp := countingProvider{tp: otel.GetTracerProvider(), mu: &mu, spans: &spans}
	st := openStore(t, 2)
	g, err := gateway.New(gateway.Config{Region: "test", Worker: "w", Store: st, Auth: verifier(t),
		Endpoints: endpoints(t, ""), Next: gateway.NewProxy(u, nil), TracerProvider: tp})
	srv := served(t, g, err)

	if code, h, b := do(t, post(t, srv.URL+"/v1/things", token(t, "alice"), "untraced-1", `{}`)); code != http.StatusCreated {
		t.Fatalf("untraced first run: %s", describe(code, h, b))
	}
	mu.Lock()
	if want := []string{"POST /v1/things"}; !slices.Equal(spans, want) {
		t.Errorf("spans of an untraced first run %q, want %q", spans, want)
	}
	spans = spans[:0]
	mu.Unlock()

	traced := post(t, srv.URL+"/v1/things", token(t, "alice"), "untraced-2", `{}`)
	traced.Header.Set("traceparent", traceparent)
	if code, h, b := do(t, traced); code != http.StatusCreated {
		t.Fatalf("traced first run: %s", describe(code, h, b))
	}
	mu.Lock()
	defer mu.Unlock()
	ns := " " + st.DBNamespace()
	if want := []string{"POST /v1/things", "claim" + ns, "record_stage" + ns, gateway.SpanUpstream, "finish" + ns}; !slices.Equal(spans, want) {
		t.Errorf("spans of a first run with a client traceparent %q, want %q", spans, want)
	}
	if want := []string{"", traceparent}; !slices.Equal(got, want) {
		t.Errorf("upstream got traceparents %q, want %q", got, want)
	}
}
