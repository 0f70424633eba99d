package gateway_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idemcoord/idemcoord/gateway"
)

// referenceEndpoint is a reference-replay endpoint over /v1/things.
const referenceEndpoint = "    replay: {mode: reference, resource_path: \"/v1/things/{resource_id}\", keep: [/id]}\n"

// serveProxied serves a real upstream handler behind a gateway in gateway
// mode (NewProxy: a reverse proxy over real HTTP), one endpoint configured
// by extra.
func serveProxied(t *testing.T, extra string, upstream http.Handler) *httptest.Server {
	t.Helper()
	return serveOnStore(t, openStore(t, 8), extra, upstream)
}

// rawDo sends req without Go's transparent decompression and returns the
// answer's status, headers and body bytes as they came.
func rawDo(t *testing.T, req *http.Request) (int, http.Header, []byte) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

func TestAReferenceReplaysHeadersDescribeItsBody(t *testing.T) {
	const thing = `{"id":"t1","name":"first"}`
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.Header().Set("Location", "/v1/things/t1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, thing)
			return
		}
		// A compressing upstream: gzip for whoever accepts it.
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Vary", "Accept-Encoding")
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			io.WriteString(w, thing)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		io.WriteString(zw, thing)
		zw.Close()
	})
	srv := serveProxied(t, referenceEndpoint, upstream)
	alice := token(t, "alice")
	const key = "reference-gzip-01"
	if status, _, body := do(t, post(t, srv.URL+"/v1/things", alice, key, `{}`)); status != http.StatusCreated {
		t.Fatalf("first run: %d %s", status, body)
	}

	tests := []struct{ name, acceptEncoding string }{
		{"client accepts gzip", "gzip"},
		{"client asks for identity", "identity"},
		{"client says nothing", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := post(t, srv.URL+"/v1/things", alice, key, `{}`)
			if tt.acceptEncoding != "" {
				req.Header.Set("Accept-Encoding", tt.acceptEncoding)
			}
			status, h, body := rawDo(t, req)
			if status != http.StatusCreated || h.Get(gateway.HeaderReplayed) != "true" {
				t.Fatalf("replay: %d replayed %q", status, h.Get(gateway.HeaderReplayed))
			}
			if h.Get("Content-Encoding") == "gzip" {
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatalf("labelled gzip, but the body is not: %v", err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			if string(body) != thing || h.Get("Content-Type") != "application/json" {
				t.Fatalf("replay's body decoded by its own headers (Content-Encoding %q, Content-Type %q): %q; want %s",
					h.Get("Content-Encoding"), h.Get("Content-Type"), body, thing)
			}
		})
	}
}

func TestAReferenceReplayStreamsTheResourceItRereads(t *testing.T) {
	const first, rest = `{"id":"t1","chunks":["first",`, `"rest"]}`
	clientSawFirst := make(chan struct{})
	var rereads atomic.Int64
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.Header().Set("Location", "/v1/things/t1")
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"id":"t1"}`)
			return
		}
		rereads.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, first)
		w.(http.Flusher).Flush()
		// The rest only once the client has the first bytes: a replay
		// that holds the whole resource before it answers never gets it.
		select {
		case <-clientSawFirst:
			io.WriteString(w, rest)
		case <-r.Context().Done():
		}
	})
	srv := serveProxied(t, referenceEndpoint+"    upstream_timeout: 3s\n", upstream)
	alice := token(t, "alice")
	const key = "reference-stream-01"
	if status, _, body := do(t, post(t, srv.URL+"/v1/things", alice, key, `{}`)); status != http.StatusCreated {
		t.Fatalf("first run: %d %s", status, body)
	}
	resp, err := http.DefaultClient.Do(post(t, srv.URL+"/v1/things", alice, key, `{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := make([]byte, len(first))
	if _, err := io.ReadFull(resp.Body, got); err != nil || string(got) != first {
		t.Fatalf("first bytes of the replay: %q, %v; want %q while the upstream is still sending", got, err, first)
	}
	close(clientSawFirst)
	tail, err := io.ReadAll(resp.Body)
	if err != nil || string(tail) != rest || resp.StatusCode != http.StatusCreated || resp.Header.Get(gateway.HeaderReplayed) != "true" {
		t.Fatalf("replay: %d replayed %q, rest %q %v", resp.StatusCode, resp.Header.Get(gateway.HeaderReplayed), tail, err)
	}
	if rereads.Load() != 1 {
		t.Fatalf("re-read %d times, want 1", rereads.Load())
	}
}

func TestAReferenceReplayRereadsTheResourceTheLocationNamesWithItsQuery(t *testing.T) {
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost:
			w.Header().Set("Location", "/v1/things/t%2F1?version=2&x=y")
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"id":"t/1"}`)
		case r.URL.EscapedPath() == "/v1/things/t%2F1" && r.URL.RawQuery == "version=2&x=y":
			io.WriteString(w, `{"id":"t/1","version":2}`)
		default:
			http.NotFound(w, r)
		}
	})
	srv := serveProxied(t, referenceEndpoint, upstream)
	alice := token(t, "alice")
	const key = "reference-query-01"
	if status, _, body := do(t, post(t, srv.URL+"/v1/things", alice, key, `{}`)); status != http.StatusCreated {
		t.Fatalf("first run: %d %s", status, body)
	}
	status, h, body := do(t, post(t, srv.URL+"/v1/things", alice, key, `{}`))
	if status != http.StatusCreated || h.Get(gateway.HeaderReplayed) != "true" || body != `{"id":"t/1","version":2}` {
		t.Fatalf("replay: %s; want the resource the Location names, query kept", describe(status, h, body))
	}
}

func TestAReferenceEndpointReplaysATerminalFailureWithItsErrorBody(t *testing.T) {
	const refusal = `{"error":"card_declined","detail":"insufficient funds"}`
	var runs atomic.Int64
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusPaymentRequired)
		io.WriteString(w, refusal)
	})
	srv := serveProxied(t, referenceEndpoint, upstream)
	alice := token(t, "alice")
	const key = "reference-4xx-01"
	if status, _, body := do(t, post(t, srv.URL+"/v1/things", alice, key, `{}`)); status != http.StatusPaymentRequired || body != refusal {
		t.Fatalf("first run: %d %s", status, body)
	}
	status, h, body := do(t, post(t, srv.URL+"/v1/things", alice, key, `{}`))
	if status != http.StatusPaymentRequired || h.Get(gateway.HeaderReplayed) != "true" || body != refusal ||
		h.Get("Idempotent-Body-Omitted") != "" {
		t.Fatalf("replay: %s omitted %q; want the upstream's 402 with its error body", describe(status, h, body),
			h.Get("Idempotent-Body-Omitted"))
	}
	if runs.Load() != 1 {
		t.Fatalf("upstream ran %d times, want 1", runs.Load())
	}
}
