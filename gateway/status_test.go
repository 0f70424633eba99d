package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/idemcoord/idemcoord/idempotency"
)

// TestInformationalResponseIsNeverTheRecordedAnswer: a handler that sends
// 103 Early Hints before its answer is recorded and replayed with the
// final status; a 103 followed by a 503 is a retryable failure, not a
// stored success.
func TestInformationalResponseIsNeverTheRecordedAnswer(t *testing.T) {
	for _, tc := range []struct {
		name      string
		final     int
		wantState idempotency.State
		replayed  bool
	}{
		{name: "103 then 201", final: http.StatusCreated, wantState: idempotency.Completed, replayed: true},
		{name: "103 then 503", final: http.StatusServiceUnavailable, wantState: idempotency.RetryableFailure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int64
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs.Add(1)
				w.Header().Set("Link", "</style.css>; rel=preload; as=style")
				w.WriteHeader(http.StatusEarlyHints)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.final)
				io.WriteString(w, `{"done":true}`)
			})
			s := openStore(t, 8)
			srv := serveWrapped(t, s, "", h)
			alice := token(t, "alice")
			if st, hd, b := do(t, post(t, srv.URL+"/v1/things", alice, "hints-1", `{}`)); st != tc.final {
				t.Fatalf("first answer %s, want %d", describe(st, hd, b), tc.final)
			}
			rec, err := s.Read(context.Background(), reviewScope(t, "alice", "hints-1"))
			if err != nil || rec.State != tc.wantState || (tc.replayed && rec.Snapshot.Status != tc.final) {
				t.Fatalf("record %s status %d (%v), want %s", rec.State, rec.Snapshot.Status, err, tc.wantState)
			}
			st, hd, b := do(t, post(t, srv.URL+"/v1/things", alice, "hints-1", `{}`))
			if tc.replayed && (st != tc.final || hd.Get("Idempotent-Replayed") != "true") {
				t.Fatalf("retry %s, want %d replayed", describe(st, hd, b), tc.final)
			}
			if !tc.replayed && runs.Load() != 2 {
				t.Fatalf("retry %s after %d runs: a retryable answer must run again", describe(st, hd, b), runs.Load())
			}
		})
	}
}

// TestInvalidStatusIsBadGatewayAndUnknown: an answer whose status is no
// final HTTP status (Go's client takes any three digits; a handler may
// call WriteHeader with anything) is never stored or relayed: 502, and
// the operation's outcome is unknown, since it ran.
func TestInvalidStatusIsBadGatewayAndUnknown(t *testing.T) {
	raw := func(status string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			buf.WriteString("HTTP/1.1 " + status + "\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
			buf.Flush()
		})
	}
	for _, tc := range []struct {
		name  string
		proxy http.Handler // upstream behind the proxy; nil: middleware with code
		code  int
	}{
		{name: "proxy 099", proxy: raw("099 Odd")},
		{name: "proxy 600", proxy: raw("600 Odd")},
		{name: "proxy 101", proxy: raw("101 Switching Protocols")},
		{name: "handler 42", code: 42},
		{name: "handler 101", code: http.StatusSwitchingProtocols},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t, 8)
			var srv *httptest.Server
			if tc.proxy != nil {
				up := httptest.NewServer(tc.proxy)
				defer up.Close()
				u, _ := url.Parse(up.URL)
				_, srv = serveGateway(t, "w", s, nil, u, "")
			} else {
				srv = serveWrapped(t, s, "", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.WriteHeader(tc.code)
				}))
			}
			alice := token(t, "alice")
			for i := range 2 {
				req := post(t, srv.URL+"/v1/things", alice, "odd-1", `{}`)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatalf("request %d: %v: the gateway failed to answer", i, err)
				}
				resp.Body.Close()
				want := http.StatusBadGateway
				if i == 1 {
					want = http.StatusConflict // held as unknown, no resolve path
				}
				if resp.StatusCode != want {
					t.Fatalf("request %d: status %d, want %d", i, resp.StatusCode, want)
				}
			}
			rec, err := s.Read(context.Background(), reviewScope(t, "alice", "odd-1"))
			if err != nil || rec.State != idempotency.OutcomeUnknown {
				t.Fatalf("record %s (%v), want OUTCOME_UNKNOWN", rec.State, err)
			}
		})
	}
}
