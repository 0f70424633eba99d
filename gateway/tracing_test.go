package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/idemcoord/idemcoord/gateway"
)

// spanTree renders the spans as "parent>child" edges plus each span's
// decision, so a test compares the whole tree at once.
func spanTree(spans tracetest.SpanStubs) []string {
	names := map[string]string{}
	for _, s := range spans {
		names[s.SpanContext.SpanID().String()] = s.Name
	}
	var edges []string
	for _, s := range spans {
		parent := names[s.Parent.SpanID().String()]
		if parent == "" {
			parent = "root"
		}
		edges = append(edges, parent+">"+s.Name)
	}
	slices.Sort(edges)
	return edges
}

// attr returns the span's attribute key, or "".
func attr(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

func TestSpanTreeOfFirstRunAndReplay(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(t.Context())

	var upstreamTraceparent string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		upstreamTraceparent = r.Header.Get("traceparent")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"thing-1"}`)
	}))
	defer upstream.Close()
	u, _ := url.Parse(upstream.URL)
	g, err := gateway.New(gateway.Config{Region: "test", Worker: "w", Store: openStore(t, 4), Auth: verifier(t),
		Endpoints: endpoints(t, ""), Next: gateway.NewProxy(u, nil), TracerProvider: tp})
	srv := served(t, g, err)

	const key = "secret-looking-key-123"
	body := `{"name":"a"}`
	for _, tt := range []struct {
		name     string
		tree     []string
		decision string
	}{
		{"first run", []string{"idemcoord.request>idemcoord.claim", "idemcoord.request>idemcoord.finish",
			"idemcoord.request>idemcoord.upstream", "root>idemcoord.request"}, "first_run"},
		{"replay", []string{"idemcoord.request>idemcoord.claim", "root>idemcoord.request"}, "replay"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			exp.Reset()
			resp, err := http.DefaultClient.Do(post(t, srv.URL+"/v1/things", token(t, "alice"), key, body))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("status %d, want 201", resp.StatusCode)
			}
			spans := exp.GetSpans()
			if got := spanTree(spans); !slices.Equal(got, tt.tree) {
				t.Fatalf("span tree %v, want %v", got, tt.tree)
			}
			opID := resp.Header.Get(gateway.HeaderOperationID)
			for _, s := range spans {
				if s.SpanContext.TraceID() != spans[0].SpanContext.TraceID() {
					t.Errorf("span %s in another trace", s.Name)
				}
				for _, kv := range s.Attributes {
					if v := kv.Value.Emit(); strings.Contains(v, key) || strings.Contains(v, body) {
						t.Errorf("span %s attribute %s carries the raw key or body: %q", s.Name, kv.Key, v)
					}
				}
				switch s.Name {
				case gateway.SpanRequest, gateway.SpanClaim:
					if got := attr(s, gateway.AttrDecision); got != tt.decision {
						t.Errorf("span %s decision %q, want %q", s.Name, got, tt.decision)
					}
					if got := attr(s, gateway.AttrOperationID); got != opID {
						t.Errorf("span %s operation id %q, want %q", s.Name, got, opID)
					}
				case gateway.SpanFinish:
					if got := attr(s, gateway.AttrOperationID); got != opID {
						t.Errorf("finish span operation id %q, want %q", got, opID)
					}
					if got := attr(s, gateway.AttrState); got != "COMPLETED" {
						t.Errorf("finish span state %q, want COMPLETED", got)
					}
				case gateway.SpanUpstream:
					if got := attr(s, gateway.AttrOperationID); got != opID {
						t.Errorf("upstream span operation id %q, want %q", got, opID)
					}
					// The upstream's traceparent names this span as parent.
					want := "00-" + s.SpanContext.TraceID().String() + "-" + s.SpanContext.SpanID().String() + "-01"
					if upstreamTraceparent != want {
						t.Errorf("upstream got traceparent %q, want %q (the upstream span)", upstreamTraceparent, want)
					}
				}
			}
		})
	}
}

func TestPassthroughContinuesTheRequestSpan(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(t.Context())
	var got string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("traceparent")
	}))
	defer upstream.Close()
	u, _ := url.Parse(upstream.URL)
	g, err := gateway.New(gateway.Config{Region: "test", Worker: "w", Store: openStore(t, 2), Auth: verifier(t),
		Endpoints: endpoints(t, ""), Next: gateway.NewProxy(u, nil), TracerProvider: tp})
	srv := served(t, g, err)
	const client = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/elsewhere", nil)
	req.Header.Set("traceparent", client)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].Name != gateway.SpanRequest || attr(spans[0], gateway.AttrResult) != "passthrough" {
		t.Fatalf("spans %v, want one passthrough request span", spanTree(spans))
	}
	s := spans[0]
	if s.SpanContext.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" || s.Parent.SpanID().String() != "b7ad6b7169203331" {
		t.Errorf("request span does not continue the client's trace: trace %s parent %s", s.SpanContext.TraceID(), s.Parent.SpanID())
	}
	if want := "00-" + s.SpanContext.TraceID().String() + "-" + s.SpanContext.SpanID().String() + "-01"; got != want {
		t.Errorf("upstream traceparent %q, want %q", got, want)
	}
}

// TestTracingOffStillCarriesTheClientsTraceUpstream: with tracing off (the
// no-op provider idemd passes), the pipeline's store and executor are not
// decorated, and the upstream still gets the client's trace context, on a
// first run and on a passthrough alike.
func TestTracingOffStillCarriesTheClientsTraceUpstream(t *testing.T) {
	const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	const baggage = "tenant=t1"
	var got []string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		got = append(got, r.Header.Get("traceparent")+" "+r.Header.Get("baggage"))
		w.WriteHeader(http.StatusCreated)
	}))
	defer upstream.Close()
	u, _ := url.Parse(upstream.URL)
	g, err := gateway.New(gateway.Config{Region: "test", Worker: "w", Store: openStore(t, 2), Auth: verifier(t),
		Endpoints: endpoints(t, ""), Next: gateway.NewProxy(u, nil), TracerProvider: noop.NewTracerProvider()})
	srv := served(t, g, err)
	first := post(t, srv.URL+"/v1/things", token(t, "alice"), "traced-off-1", `{}`)
	pass, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/elsewhere", nil)
	for _, req := range []*http.Request{first, pass} {
		req.Header.Set("traceparent", traceparent)
		req.Header.Set("baggage", baggage)
		if code, h, b := do(t, req); code != http.StatusCreated {
			t.Fatalf("%s %s: %s", req.Method, req.URL.Path, describe(code, h, b))
		}
	}
	want := []string{traceparent + " " + baggage, traceparent + " " + baggage}
	if !slices.Equal(got, want) {
		t.Errorf("upstream got trace context %q, want the client's %q", got, want)
	}
}
