package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/idemcoord/idemcoord/gateway"
)

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

// TestMiddlewareRunsEachIntentOnce wraps a handler in-process: 32
// concurrent requests with one key run it once; the rest are 409 or
// replays of the one answer; the handler sees the operation id.
func TestMiddlewareRunsEachIntentOnce(t *testing.T) {
	var runs atomic.Int64
	var opIDs sync.Map
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := runs.Add(1)
		opIDs.Store(r.Header.Get(gateway.HeaderOperationID), true)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"thing":%d}`, n)
	})
	srv := serveWrapped(t, openStore(t, 40), "", h)
	auth := token(t, "alice")
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	bodies := map[string]int{}
	for range 32 {
		wg.Go(func() {
			resp, err := http.DefaultClient.Do(post(t, srv.URL+"/v1/things", auth, "k-1", `{"n":1}`))
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			mu.Lock()
			statuses[resp.StatusCode]++
			if resp.StatusCode == http.StatusCreated {
				bodies[string(b)]++
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if runs.Load() != 1 {
		t.Fatalf("handler ran %d times, want 1 (statuses %v)", runs.Load(), statuses)
	}
	if statuses[http.StatusCreated]+statuses[http.StatusConflict] != 32 || len(bodies) != 1 {
		t.Fatalf("statuses %v bodies %v: want only 201 (one body) and 409", statuses, bodies)
	}
	resp, err := http.DefaultClient.Do(post(t, srv.URL+"/v1/things", auth, "k-1", `{"n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Idempotent-Replayed") != "true" || bodies[string(b)] == 0 {
		t.Fatalf("retry: replayed=%q body %s, want the stored answer replayed", resp.Header.Get("Idempotent-Replayed"), b)
	}
	n := 0
	opIDs.Range(func(k, _ any) bool { n++; return k.(string) != "" })
	if n != 1 {
		t.Fatalf("handler saw %d operation ids, want 1", n)
	}
}

// TestMiddlewareRefusals covers 401, 400 and 413 without running the handler.
func TestMiddlewareRefusals(t *testing.T) {
	var runs atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { runs.Add(1); w.WriteHeader(201) })
	srv := serveWrapped(t, openStore(t, 4), "    max_request_bytes: 1KiB\n", h)
	auth := token(t, "alice")
	for _, tc := range []struct {
		name, auth, key, body string
		want                  int
	}{
		{"no token", "", "k", `{}`, 401},
		{"bad token", "Bearer nope", "k", `{}`, 401},
		{"missing key", auth, "", `{}`, 400},
		{"key too long", auth, strings.Repeat("k", 256), `{}`, 400},
		{"malformed json", auth, "k2", `{"a":`, 400},
		{"body too large", auth, "k3", `{"a":"` + strings.Repeat("x", 2048) + `"}`, 413},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.DefaultClient.Do(post(t, srv.URL+"/v1/things", tc.auth, tc.key, tc.body))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want || resp.Header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("status %d (%s), want %d problem+json", resp.StatusCode, resp.Header.Get("Content-Type"), tc.want)
			}
		})
	}
	if runs.Load() != 0 {
		t.Fatalf("handler ran %d times for refused requests", runs.Load())
	}
}
