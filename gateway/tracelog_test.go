package gateway_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/internal/tracelog"
)

// traceLogSink is a bytes.Buffer safe for the logger's concurrent writes.
type traceLogSink struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *traceLogSink) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *traceLogSink) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestARequestsLogLineCarriesItsTraceID: the warning a request logs when
// its upstream call's outcome is unknown (the upstream cut the connection)
// carries trace_id and span_id of the request's trace, as idemd's logger
// (tracelog) writes them, and neither the raw key nor the body.
func TestARequestsLogLineCarriesItsTraceID(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(t.Context())
	var logs traceLogSink
	log := slog.New(tracelog.Wrap(slog.NewJSONHandler(&logs, nil)))
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		panic(http.ErrAbortHandler) // the connection drops: sent, no answer
	}))
	defer upstream.Close()
	u, _ := url.Parse(upstream.URL)
	g, err := gateway.New(gateway.Config{Region: "test", Worker: "w", Store: openStore(t, 2), Auth: verifier(t),
		Endpoints: endpoints(t, ""), Next: gateway.NewProxy(u, nil), TracerProvider: tp, Logger: log})
	srv := served(t, g, err)

	const key, body = "raw-key-never-logged-42", `{"card":"4111-secret-body"}`
	code, h, b := do(t, post(t, srv.URL+"/v1/things", token(t, "alice"), key, body))
	if code < 500 {
		t.Fatalf("first run with the upstream cut off: %s; want a 5xx", describe(code, h, b))
	}
	server := serverSpan(t, tracetest.SpanStubsFromReadOnlySpans(rec.Ended()))
	spanIDs := map[string]bool{}
	for _, s := range rec.Ended() {
		spanIDs[s.SpanContext().SpanID().String()] = true
	}
	var found bool
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, key) || strings.Contains(line, "4111-secret-body") {
			t.Errorf("log line carries the raw key or the body: %s", line)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if m["msg"] != "upstream outcome unknown" {
			continue
		}
		found = true
		if m[tracelog.TraceIDKey] != server.SpanContext.TraceID().String() {
			t.Errorf("log line trace_id %v, want the request's trace %s: %s", m[tracelog.TraceIDKey], server.SpanContext.TraceID(), line)
		}
		if id, _ := m[tracelog.SpanIDKey].(string); !spanIDs[id] {
			t.Errorf("log line span_id %v is none of the trace's spans: %s", m[tracelog.SpanIDKey], line)
		}
		if k, _ := m["key"].(string); !strings.HasPrefix(k, "sha256:") {
			t.Errorf("log line key %q, want the key's hash", k)
		}
	}
	if !found {
		t.Fatalf("no \"upstream outcome unknown\" line in the logs:\n%s", logs.String())
	}
	if got := attr(server, "error.type"); got != "504" && got != "502" {
		t.Errorf("server span error.type %q, want the 5xx status", got)
	}
}
