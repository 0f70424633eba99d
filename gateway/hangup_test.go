package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/idempotency"
)

// TestClientHangUpStillRecordsTheAnswer: the client times out (hangs up)
// while the upstream call is in flight. Proxy.Execute deliberately detaches
// the upstream call from the client's context, and the upstream answers 201;
// but Finish runs on the cancelled request context, so the result is never
// stored. The record stays IN_PROGRESS, retries get 409 until the lease
// expires, and then the takeover (no resolve path) records OUTCOME_UNKNOWN:
// no retry ever gets the one run's answer.
func TestClientHangUpStillRecordsTheAnswer(t *testing.T) {
	var runs atomic.Int64
	started := make(chan struct{}, 4)
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		started <- struct{}{}
		<-release
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"thing_1"}`)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	s, fake := clockedStore(t, 8)
	g, err := gateway.New(gateway.Config{Region: "test", Worker: "w", Store: s, Auth: verifier(t), Clock: fake,
		Endpoints: reviewEndpoints(t, "    lease: 2s\n    upstream_timeout: 1s\n"), Next: gateway.NewProxy(u, nil)})
	if err != nil {
		t.Fatal(err)
	}
	startGateway(t, g)
	defer g.Close()
	served := make(chan struct{}, 8)
	noticed := make(chan struct{}, 8) // the server saw a request's client hang up
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stop := context.AfterFunc(r.Context(), func() { noticed <- struct{}{} })
		g.ServeHTTP(w, r)
		stop()
		served <- struct{}{}
	}))
	defer srv.Close()
	alice := token(t, "alice")

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		req := post(t, srv.URL+"/v1/things", alice, "hangup-1", `{"n":1}`).WithContext(ctx)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	cancel()       // the client gives up
	<-noticed      // the server notices the closed connection
	close(release) // the upstream answers 201: the intent ran
	<-served

	if st := waitState(t, s, reviewScope(t, "alice", "hangup-1"), idempotency.Completed, time.Second); st != idempotency.Completed {
		t.Errorf("record after the upstream answered 201: %s, want COMPLETED (Finish ran on the cancelled request context)", st)
	}
	fake.Advance(2100 * time.Millisecond) // past the lease
	var got []string
	for range 2 {
		st, hd, b := do(t, post(t, srv.URL+"/v1/things", alice, "hangup-1", `{"n":1}`))
		got = append(got, describe(st, hd, b))
		if st != http.StatusCreated || hd.Get("Idempotent-Replayed") != "true" {
			t.Errorf("retry after the one run: %s, want the 201 replayed", describe(st, hd, b))
		}
	}
	t.Logf("retries: %q; upstream runs %d", got, runs.Load())
}
