package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/testutil"
)

// TestAsyncTakeoverAsksTheResolvePathBeforeRunning: an async execution ran its
// intent, then its worker died before recording the result (record stays
// PENDING). After the lease, a retry takes the operation over; accept()
// hands execute() a Claim{Outcome: FirstRun}, so the takeover never asks the
// resolve path (which knows it ran) and runs the intent a second time.
func TestAsyncTakeoverAsksTheResolvePathBeforeRunning(t *testing.T) {
	var runs atomic.Int64
	var done sync.Map
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/things", func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		done.Store(r.Header.Get(gateway.HeaderOperationID), true)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"export":"done"}`)
	})
	mux.HandleFunc("GET /internal/operations/{id}", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := done.Load(r.PathValue("id")); !ok {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, resolutionBody(201, `{"export":"done"}`))
	})
	leases := clock.NewFake(time.Now())
	s := storeOnClock(t, leases, 8)
	st := &failFinish{Store: s}
	st.n.Store(1)
	g, err := gateway.Wrap(gateway.Config{Region: "test", Worker: "w", Store: st, Auth: verifier(t),
		Endpoints: reviewEndpoints(t, "    async: true\n    lease: 1s\n    upstream_timeout: 500ms\n"+
			"    resolve_path: /internal/operations/{operation_id}\n")}, mux)
	srv := served(t, g, err)
	alice := token(t, "alice")

	if code, h, b := do(t, post(t, srv.URL+"/v1/things", alice, "export-1", `{}`)); code != http.StatusAccepted {
		t.Fatalf("first: %s", describe(code, h, b))
	}
	testutil.Eventually(t, 10*time.Second, testutil.Cond(func() bool { return runs.Load() > 0 }))
	leases.Advance(1200 * time.Millisecond) // the dead worker's lease runs out
	if code, h, b := do(t, post(t, srv.URL+"/v1/things", alice, "export-1", `{}`)); code != http.StatusAccepted {
		t.Fatalf("retry: %s", describe(code, h, b))
	}
	state := waitState(t, s, reviewScope(t, "alice", "export-1"), idempotency.Completed, 3*time.Second)
	if runs.Load() != 1 {
		t.Fatalf("the async intent ran %d times (record %s): the takeover re-executed instead of asking the resolve path first",
			runs.Load(), state)
	}
}

// TestAsyncResultIsRecordedThroughClose: Gateway.Close (every graceful
// shutdown, every rolling deploy) cancels the context the background run
// uses for Finish. The proxied upstream call is detached and completes with
// 201, but Finish then fails on the cancelled context: the record stays
// PENDING, the result is lost, and (with the bug above) the next retry runs
// the intent again.
func TestAsyncResultIsRecordedThroughClose(t *testing.T) {
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"export":"done"}`)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	s := openStore(t, 8)
	g, err := gateway.New(gateway.Config{Region: "test", Worker: "w", Store: s, Auth: verifier(t),
		Endpoints: endpoints(t, "    async: true\n"), Next: gateway.NewProxy(u, nil)})
	if err != nil {
		t.Fatal(err)
	}
	startGateway(t, g)
	srv := httptest.NewServer(g)
	defer srv.Close()
	alice := token(t, "alice")
	if code, h, b := do(t, post(t, srv.URL+"/v1/things", alice, "export-2", `{}`)); code != http.StatusAccepted {
		t.Fatalf("first: %s", describe(code, h, b))
	}
	<-started
	closed := make(chan struct{})
	go func() { g.Close(); close(closed) }()
	testutil.Eventually(t, 10*time.Second, testutil.Cond(func() bool { return gateway.Closing(g) }))
	close(release) // the upstream completes the intent, Close under way
	<-closed
	sc := reviewScope(t, "alice", "export-2")
	if st := waitState(t, s, sc, idempotency.Completed, 500*time.Millisecond); st != idempotency.Completed {
		t.Fatalf("after Close, the upstream's 201 is recorded as %s, want COMPLETED: Finish ran on the cancelled background context", st)
	}
}

// TestAsyncOutcomeUnknownIsResolvedOnRetry: the contract resolves an
// OUTCOME_UNKNOWN operation on the next retry by asking the resolve path.
// On an async endpoint decide() answers 202 for Unresolved before resolving,
// so the operation stays OUTCOME_UNKNOWN for ever although the upstream can
// say it ran.
func TestAsyncOutcomeUnknownIsResolvedOnRetry(t *testing.T) {
	var runs, finished atomic.Int64
	var done sync.Map
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/things", func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		// Deliberate: a slow upstream, longer than upstream_timeout (the
		// gateway's real HTTP timeout, which no injected clock moves).
		time.Sleep(600 * time.Millisecond)
		done.Store(r.Header.Get(gateway.HeaderOperationID), true)
		finished.Add(1)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"export":"done"}`)
	})
	mux.HandleFunc("GET /internal/operations/{id}", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := done.Load(r.PathValue("id")); !ok {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, resolutionBody(201, `{"export":"done"}`))
	})
	up := httptest.NewServer(mux)
	defer up.Close()
	u, _ := url.Parse(up.URL)
	s := openStore(t, 8)
	g, err := gateway.New(gateway.Config{Region: "test", Worker: "w", Store: s, Auth: verifier(t),
		Endpoints: reviewEndpoints(t, "    async: true\n    lease: 1s\n    upstream_timeout: 300ms\n"+
			"    resolve_path: /internal/operations/{operation_id}\n"), Next: gateway.NewProxy(u, nil)})
	srv := served(t, g, err)
	alice := token(t, "alice")
	sc := reviewScope(t, "alice", "export-3")
	if code, h, b := do(t, post(t, srv.URL+"/v1/things", alice, "export-3", `{}`)); code != http.StatusAccepted {
		t.Fatalf("first: %s", describe(code, h, b))
	}
	if st := waitState(t, s, sc, idempotency.OutcomeUnknown, 3*time.Second); st != idempotency.OutcomeUnknown {
		t.Fatalf("setup: record %s, want OUTCOME_UNKNOWN after the upstream timeout", st)
	}
	// The upstream has finished: its resolve path says it ran.
	testutil.Eventually(t, 10*time.Second, testutil.Cond(func() bool { return finished.Load() == 1 }))
	for range 3 {
		do(t, post(t, srv.URL+"/v1/things", alice, "export-3", `{}`))
	}
	if st := waitState(t, s, sc, idempotency.Completed, 2*time.Second); st != idempotency.Completed {
		t.Fatalf("after retries, record %s, want COMPLETED: an async retry never asks the resolve path", st)
	}
	if runs.Load() != 1 {
		t.Fatalf("upstream ran %d times", runs.Load())
	}
}
