package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/internal/testutil"
	"github.com/idemcoord/idemcoord/store"
)

// hangingExecutor is the executor of an instance that dies while running
// an intent: Execute blocks (the instance is gone as far as anyone can
// tell) until the test ends, then reports that nothing was sent.
type hangingExecutor struct {
	entered chan struct{}
	release chan struct{}
}

func (h hangingExecutor) Execute(ctx context.Context, in gateway.Invocation) gateway.Answer {
	h.entered <- struct{}{}
	<-h.release
	return gateway.Answer{Err: errors.New("instance gone"), Sent: false}
}

func (h hangingExecutor) Resolve(context.Context, gateway.Invocation) (gateway.Verdict, gateway.Answer) {
	return gateway.Undetermined, gateway.Answer{}
}

func (h hangingExecutor) Pass(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }

// operationState polls GET /v1/operations/{id} until the operation reaches
// want or d passes (the run is in the background), and returns the last
// state seen.
func operationState(t testing.TB, base, auth, id, want string, d time.Duration) string {
	t.Helper()
	var last string
	testutil.Poll(d, func() error {
		req, _ := http.NewRequest(http.MethodGet, base+"/v1/operations/"+id, nil)
		req.Header.Set("Authorization", auth)
		code, _, body := do(t, req)
		var v struct {
			State string `json:"state"`
		}
		json.Unmarshal([]byte(body), &v)
		if last = v.State; code != http.StatusOK || v.State != want {
			return fmt.Errorf("operation %s: %d %s", id, code, v.State)
		}
		return nil
	})
	return last
}

// countingUpstream answers the async endpoint with 201 and its resolve
// path from what it ran. recovered says every run is a recovered one,
// which must reach the upstream without the client's credentials.
func countingUpstream(t *testing.T, runs *atomic.Int64, recovered bool) *url.URL {
	t.Helper()
	var done sync.Map
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/things", func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		if recovered && (r.Header.Get("Authorization") != "" || r.Header.Get("Cookie") != "" || r.Header.Get("Idempotency-Key") != "") {
			t.Errorf("a recovered run carried credentials: %v", r.Header)
		}
		b, _ := io.ReadAll(r.Body)
		done.Store(r.Header.Get(gateway.HeaderOperationID), true)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write(b)
	})
	mux.HandleFunc("GET /internal/operations/{id}", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := done.Load(r.PathValue("id")); !ok {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, resolutionBody(201, `{"export":"csv"}`))
	})
	up := httptest.NewServer(mux)
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	return u
}

const asyncEndpoint = "    async: true\n    lease: 30s\n    upstream_timeout: 5s\n" +
	"    resolve_path: /internal/operations/{operation_id}\n"

// TestAsyncWorkOfADeadInstanceRunsOnceWithoutANewPOST: an instance answers
// 202 and dies before its task runs. Once the task's lease expires, a live
// instance's recovery loop takes it over (asking the resolve path first,
// since the dead one may have sent) and runs it, exactly once, with no new
// POST from the client, and the status URL shows COMPLETED.
func TestAsyncWorkOfADeadInstanceRunsOnceWithoutANewPOST(t *testing.T) {
	var runs atomic.Int64
	up := countingUpstream(t, &runs, true)
	lease := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	s := storeOnClock(t, lease, 16)
	eps := endpoints(t, asyncEndpoint)

	srvA, dead := deadInstance(t, s, eps, lease.Now()) // its recovery clock never moves: it scans nothing

	recoveryClock := clock.NewFake(lease.Now())
	b, err := gateway.New(gateway.Config{Region: "test", Worker: "live", Store: s, Auth: verifier(t),
		Endpoints: eps, Next: gateway.NewProxy(up, nil),
		Recovery: gateway.RecoveryConfig{Clock: recoveryClock, Interval: 5 * time.Second}})
	srvB := served(t, b, err)

	alice := token(t, "alice")
	req := post(t, srvA.URL+"/v1/things", alice, "export-dead", `{"export":"csv"}`)
	req.Header.Set("Cookie", "session=secret")
	code, h, body := do(t, req)
	if code != http.StatusAccepted {
		t.Fatalf("first: %s", describe(code, h, body))
	}
	id := h.Get(gateway.HeaderOperationID)
	<-dead.entered // the task is running on the instance that is now gone

	recoveryClock.Advance(5 * time.Second) // a scan while the lease is live takes nothing
	if st := operationState(t, srvB.URL, alice, id, "COMPLETED", 200*time.Millisecond); st == "COMPLETED" || runs.Load() != 0 {
		t.Fatalf("before the lease expired: state %s, runs %d; want the live lease respected", st, runs.Load())
	}
	lease.Advance(31 * time.Second)
	recoveryClock.Advance(5 * time.Second)
	if st := operationState(t, srvB.URL, alice, id, "COMPLETED", 10*time.Second); st != "COMPLETED" {
		t.Fatalf("after the dead instance's lease expired: state %q, want COMPLETED without a new POST", st)
	}
	recoveryClock.Advance(5 * time.Second) // later scans find nothing more to run
	if got := runs.Load(); got != 1 {
		t.Fatalf("upstream ran the task %d times, want 1", got)
	}
	// A retry gets the same task and its stored result.
	if code, h, _ := do(t, post(t, srvB.URL+"/v1/things", alice, "export-dead", `{"export":"csv"}`)); code != http.StatusAccepted ||
		h.Get(gateway.HeaderOperationID) != id {
		t.Errorf("retry: %d op %s, want 202 for %s", code, h.Get(gateway.HeaderOperationID), id)
	}
}

// TestAsyncClaimRefusedWhileShuttingDownRunsOnRetry: an instance that is
// shutting down refuses an async request with 503 "nothing executed,
// retry with the same key". The claim it made is released, so the retry
// on a healthy instance runs the task at once instead of being told 202
// for a task nobody runs.
func TestAsyncClaimRefusedWhileShuttingDownRunsOnRetry(t *testing.T) {
	var runs atomic.Int64
	up := countingUpstream(t, &runs, false)
	s := openStore(t, 8)
	eps := endpoints(t, asyncEndpoint)
	newGateway := func(worker string) *httptest.Server {
		g, err := gateway.New(gateway.Config{Region: "test", Worker: worker, Store: s, Auth: verifier(t),
			Endpoints: eps, Next: gateway.NewProxy(up, nil), Recovery: gateway.RecoveryConfig{Disabled: true}})
		if err != nil {
			t.Fatal(err)
		}
		startGateway(t, g)
		t.Cleanup(func() { g.Close() })
		srv := httptest.NewServer(g)
		t.Cleanup(srv.Close)
		if worker == "closing" {
			g.Close()
		}
		return srv
	}
	closing, healthy := newGateway("closing"), newGateway("healthy")
	alice := token(t, "alice")
	if code, h, body := do(t, post(t, closing.URL+"/v1/things", alice, "export-shut", `{"export":"csv"}`)); code != http.StatusServiceUnavailable {
		t.Fatalf("while shutting down: %s, want 503", describe(code, h, body))
	}
	code, h, body := do(t, post(t, healthy.URL+"/v1/things", alice, "export-shut", `{"export":"csv"}`))
	if code != http.StatusAccepted {
		t.Fatalf("retry on a healthy instance: %s, want 202", describe(code, h, body))
	}
	if st := operationState(t, healthy.URL, alice, h.Get(gateway.HeaderOperationID), "COMPLETED", 10*time.Second); st != "COMPLETED" || runs.Load() != 1 {
		t.Fatalf("after the retry: state %q, runs %d; want the task run once and COMPLETED", st, runs.Load())
	}
}

// deadInstance serves an instance (worker "dead") whose runs hang until
// the test ends, with a recovery clock that never moves: the instance
// that dies with a task in flight. <-dead.entered once a run started.
func deadInstance(t *testing.T, s store.Store, eps []config.Endpoint, now time.Time) (srv *httptest.Server, dead hangingExecutor) {
	t.Helper()
	dead = hangingExecutor{entered: make(chan struct{}, 1), release: make(chan struct{})}
	a, err := gateway.New(gateway.Config{Region: "test", Worker: "dead", Store: s, Auth: verifier(t),
		Endpoints: eps, Next: dead, Recovery: gateway.RecoveryConfig{Clock: clock.NewFake(now)}})
	if err != nil {
		t.Fatal(err)
	}
	startGateway(t, a)
	t.Cleanup(func() { close(dead.release); a.Close() })
	srv = httptest.NewServer(a)
	t.Cleanup(srv.Close)
	return srv, dead
}
