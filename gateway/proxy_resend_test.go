package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/idempotency"
)

// TestProxyNeverResendsAWrittenRequest: the upstream acts on a request
// and then its reused keep-alive connection dies before any response
// byte. Go's http.Transport would send the request again on a new
// connection (it carries Idempotency-Key, which the transport takes for
// "safe to replay"): the upstream would run twice and the client get 201,
// or, when the new connection is refused, the attempt would look "never
// sent" and the next retry would run it again. The gateway must send once
// and call the outcome unknown.
func TestProxyNeverResendsAWrittenRequest(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refuse  bool // the upstream stops listening: a re-dial is refused
		wantRun int64
	}{
		{name: "redial accepted", wantRun: 1},
		{name: "redial refused", refuse: true, wantRun: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int64
			var up *httptest.Server
			up = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				if r.Header.Get("Idempotency-Key") == "warm-up" {
					w.WriteHeader(http.StatusCreated)
					return
				}
				if runs.Add(1) > 1 {
					w.WriteHeader(http.StatusCreated) // a resend runs it again
					io.WriteString(w, `{"charged":"again"}`)
					return
				}
				// The charge is made; the connection dies before the answer.
				conn, _, err := w.(http.Hijacker).Hijack()
				if err != nil {
					t.Error(err)
					return
				}
				if tc.refuse {
					up.Listener.Close()
				}
				conn.Close()
			}))
			defer up.Close()
			u, _ := url.Parse(up.URL)
			s := openStore(t, 8)
			g, err := gateway.New(gateway.Config{Region: "test", Worker: "w", Store: s, Auth: verifier(t),
				Endpoints: endpoints(t, ""), Next: gateway.NewProxy(u, nil)})
			srv := served(t, g, err)
			alice := token(t, "alice")
			// One request leaves a keep-alive connection to the upstream idle.
			if st, hd, b := do(t, post(t, srv.URL+"/v1/things", alice, "warm-up", `{}`)); st != http.StatusCreated {
				t.Fatalf("warm-up: %s", describe(st, hd, b))
			}
			st, hd, b := do(t, post(t, srv.URL+"/v1/things", alice, "charge-1", `{"amount":"5"}`))
			if runs.Load() != tc.wantRun {
				t.Fatalf("upstream ran %d times (answer %s), want %d: the transport resent the request", runs.Load(),
					describe(st, hd, b), tc.wantRun)
			}
			if st != http.StatusGatewayTimeout {
				t.Errorf("answer %s, want 504: the request was written, its outcome is unknown", describe(st, hd, b))
			}
			rec, err := s.Read(context.Background(), reviewScope(t, "alice", "charge-1"))
			if err != nil || rec.State != idempotency.OutcomeUnknown {
				t.Errorf("record %s (%v), want OUTCOME_UNKNOWN", rec.State, err)
			}
		})
	}
}

// TestUnreachableUpstreamIsRetryable: a request that never got a
// connection was not sent: 502 and RETRYABLE_FAILURE, so the next retry
// runs it.
func TestUnreachableUpstreamIsRetryable(t *testing.T) {
	up := httptest.NewServer(http.NotFoundHandler())
	u, _ := url.Parse(up.URL)
	up.Close() // nothing listens there now
	s := openStore(t, 8)
	_, srv := serveGateway(t, "w", s, nil, u, "")
	st, hd, b := do(t, post(t, srv.URL+"/v1/things", token(t, "alice"), "down-1", `{}`))
	if st != http.StatusBadGateway {
		t.Fatalf("answer %s, want 502", describe(st, hd, b))
	}
	rec, err := s.Read(context.Background(), reviewScope(t, "alice", "down-1"))
	if err != nil || rec.State != idempotency.RetryableFailure {
		t.Fatalf("record %s (%v), want RETRYABLE_FAILURE", rec.State, err)
	}
}
