package gateway_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/idemcoord/idemcoord/gateway"
)

// spanTree renders the spans as "parent>child" edges (each span by its
// label), so a test compares the whole tree at once.
func spanTree(spans tracetest.SpanStubs) []string {
	names := map[string]string{}
	for _, s := range spans {
		names[s.SpanContext.SpanID().String()] = label(s)
	}
	var edges []string
	for _, s := range spans {
		parent := names[s.Parent.SpanID().String()]
		if parent == "" {
			parent = "root"
		}
		edges = append(edges, parent+">"+label(s))
	}
	slices.Sort(edges)
	return edges
}

// label is a span's name, or "db:" and its db.operation.name for a
// database client span (whose name ends in the test database's name).
func label(s tracetest.SpanStub) string {
	if op := attr(s, "db.operation.name"); op != "" {
		return "db:" + op
	}
	return s.Name
}

// serverSpan returns the server span among spans.
func serverSpan(t *testing.T, spans tracetest.SpanStubs) tracetest.SpanStub {
	t.Helper()
	for _, s := range spans {
		if s.SpanKind == trace.SpanKindServer {
			return s
		}
	}
	t.Fatalf("no server span among %v", spanTree(spans))
	return tracetest.SpanStub{}
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

// TestAFirstRunAndItsReplayAreTracedByTheSemanticConventions: one first
// run and its replay, recorded in-process. The server span is named
// "{method} {route}" by the endpoint's route template and carries the
// HTTP conventions' attributes; every store call under it is a database
// client span (db.system.name postgresql, db.operation.name,
// db.namespace); the idemcoord-specific facts are idemcoord.* attributes;
// no attribute carries the raw key or the body; the upstream gets the
// upstream span's trace context.
func TestAFirstRunAndItsReplayAreTracedByTheSemanticConventions(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
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
	st := openStore(t, 4)
	g, err := gateway.New(gateway.Config{Region: "test", Worker: "w", Store: st, Auth: verifier(t),
		Endpoints: endpoints(t, ""), Next: gateway.NewProxy(u, nil), TracerProvider: tp})
	srv := served(t, g, err)
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))

	const key = "secret-looking-key-123"
	body := `{"name":"a"}`
	seen := 0
	for _, tt := range []struct {
		name     string
		tree     []string
		decision string
	}{
		// The first request reads its shard's fence (cached after), and
		// the run records its sending stage before the upstream call.
		{"first run", []string{"POST /v1/things>db:claim", "POST /v1/things>db:fence", "POST /v1/things>db:finish",
			"POST /v1/things>db:record_stage", "POST /v1/things>idemcoord.upstream", "root>POST /v1/things"}, "first_run"},
		{"replay", []string{"POST /v1/things>db:claim", "root>POST /v1/things"}, "replay"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.DefaultClient.Do(post(t, srv.URL+"/v1/things", token(t, "alice"), key, body))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("status %d, want 201", resp.StatusCode)
			}
			ended := rec.Ended()
			spans := tracetest.SpanStubsFromReadOnlySpans(ended[seen:])
			seen = len(ended)
			if got := spanTree(spans); !slices.Equal(got, tt.tree) {
				t.Fatalf("span tree %v, want %v", got, tt.tree)
			}
			opID := resp.Header.Get(gateway.HeaderOperationID)
			server := serverSpan(t, spans)
			for k, want := range map[string]string{"http.request.method": "POST", "http.route": "/v1/things",
				"http.response.status_code": "201", "url.scheme": "http", "url.path": "/v1/things",
				"server.address": host, "server.port": port, "error.type": "",
				gateway.AttrEndpoint: "create-thing", gateway.AttrDecision: tt.decision, gateway.AttrOperationID: opID,
				gateway.AttrRegion: "test"} {
				if got := attr(server, k); got != want {
					t.Errorf("server span %s = %q, want %q", k, got, want)
				}
			}
			for _, s := range spans {
				if s.SpanContext.TraceID() != server.SpanContext.TraceID() {
					t.Errorf("span %s in another trace", s.Name)
				}
				for _, kv := range s.Attributes {
					if v := kv.Value.Emit(); strings.Contains(v, key) || strings.Contains(v, body) {
						t.Errorf("span %s attribute %s carries the raw key or body: %q", s.Name, kv.Key, v)
					}
				}
				switch label(s) {
				case "db:claim", "db:finish":
					op := attr(s, "db.operation.name")
					if s.SpanKind != trace.SpanKindClient || s.Name != op+" "+st.DBNamespace() {
						t.Errorf("store span %q kind %v, want a client span named %q", s.Name, s.SpanKind, op+" "+st.DBNamespace())
					}
					for k, want := range map[string]string{"db.system.name": "postgresql", "db.namespace": st.DBNamespace(),
						gateway.AttrOperationID: opID, "db.response.status_code": "", "error.type": ""} {
						if got := attr(s, k); got != want {
							t.Errorf("%s span %s = %q, want %q", op, k, got, want)
						}
					}
					if op == "claim" {
						if got := attr(s, gateway.AttrDecision); got != tt.decision {
							t.Errorf("claim span decision %q, want %q", got, tt.decision)
						}
						if got := attr(s, "idemcoord.key_hash"); !strings.HasPrefix(got, "sha256:") || len(got) != len("sha256:")+16 {
							t.Errorf("claim span key hash %q, want sha256: and 16 hex digits", got)
						}
					} else if got := attr(s, gateway.AttrState); got != "COMPLETED" {
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
	if len(spans) != 1 || spans[0].Name != "GET" || attr(spans[0], "http.route") != "" || attr(spans[0], gateway.AttrResult) != "passthrough" {
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
