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
)

// heartbeatThrough moves fake forward by total in steps of every, letting
// the one running execution's heartbeat (the only timer) extend its lease
// at each step, and returns once the last extension is done.
func heartbeatThrough(fake *clock.Fake, total, every time.Duration) {
	for moved := time.Duration(0); moved < total; moved += every {
		fake.BlockUntil(1)
		fake.Advance(every)
	}
	fake.BlockUntil(1)
}

// TestHandlerSlowerThanItsLeaseKeepsItAndRunsOnce: a handler slower than the
// lease is alive, so its heartbeat keeps the lease: a retry meanwhile is
// told the operation is in progress, and the handler runs once.
func TestHandlerSlowerThanItsLeaseKeepsItAndRunsOnce(t *testing.T) {
	var runs atomic.Int64
	var done sync.Map
	started := make(chan struct{})
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/things", func(w http.ResponseWriter, r *http.Request) {
		if runs.Add(1) == 1 {
			close(started)
			<-release // slow, but alive
		}
		done.Store(r.Header.Get(gateway.HeaderOperationID), true)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"charged":true}`)
	})
	mux.HandleFunc("GET /internal/operations/{id}", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := done.Load(r.PathValue("id")); !ok {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, resolutionBody(201, `{"charged":true}`))
	})
	s, fake := clockedStore(t, 8)
	g, err := gateway.Wrap(gateway.Config{Region: "test", Worker: "w", Store: s, Auth: verifier(t), Clock: fake,
		Endpoints: reviewEndpoints(t, resolveEndpoint)}, mux)
	srv := served(t, g, err)
	alice := token(t, "alice")
	first := make(chan string, 1)
	go func() {
		st, hd, b := do(t, post(t, srv.URL+"/v1/things", alice, "charge-1", `{"amount":"5"}`))
		first <- describe(st, hd, b)
	}()
	<-started
	heartbeatThrough(fake, 12*time.Second, 10*time.Second/3) // past the 10 s lease, the handler still running
	st, hd, b := do(t, post(t, srv.URL+"/v1/things", alice, "charge-1", `{"amount":"5"}`))
	close(release)
	f := <-first
	if runs.Load() != 1 || st != http.StatusConflict {
		t.Fatalf("handler ran %d times (first answer %s, retry %s): a live handler was taken over", runs.Load(), f, describe(st, hd, b))
	}
}

// TestTakeoverOfAnUnsentClaimRunsTheIntent: a worker claimed a key and
// died before sending anything upstream. Its takeover, on an endpoint
// without a resolve path, finds no "sending" mark and runs the intent:
// nothing had run, so the key is not held OUTCOME_UNKNOWN.
func TestTakeoverOfAnUnsentClaimRunsTheIntent(t *testing.T) {
	var runs atomic.Int64
	u := createdUpstream(t, &runs)
	s, fake := clockedStore(t, 8)
	body := `{"amount":"5"}`
	const lease = "    lease: 10s\n"
	// The claim of a worker that died before it sent the request upstream.
	deadClaim(t, s, "alice", "unsent-1", body, lease, 10*time.Second)
	_, srv := serveGateway(t, "w", s, fake, u, lease)
	fake.Advance(11 * time.Second)
	alice := token(t, "alice")
	var got []string
	for range 2 {
		st, hd, b := do(t, post(t, srv.URL+"/v1/things", alice, "unsent-1", body))
		got = append(got, describe(st, hd, b))
	}
	if runs.Load() != 1 {
		t.Fatalf("answers %q, upstream runs %d: a claim that never reached the upstream is held as OUTCOME_UNKNOWN for ever",
			got, runs.Load())
	}
}

// TestTakeoverKeepsItsLeaseThroughResolveAndExecute: a takeover spends up
// to two upstream calls (Resolve, then Execute) under one lease; its
// heartbeat keeps the lease through both, so a second retry meanwhile is
// told the operation is in progress instead of taking it over, and the
// intent runs once.
func TestTakeoverKeepsItsLeaseThroughResolveAndExecute(t *testing.T) {
	var runs atomic.Int64
	var done sync.Map
	started := make(chan struct{})
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/things", func(w http.ResponseWriter, r *http.Request) {
		if runs.Add(1) == 1 {
			close(started)
			<-release // a slow but healthy execution
		}
		done.Store(r.Header.Get(gateway.HeaderOperationID), true)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"charged":true}`)
	})
	mux.HandleFunc("GET /internal/operations/{id}", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := done.Load(r.PathValue("id")); !ok {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, resolutionBody(201, `{"charged":true}`))
	})
	up := httptest.NewServer(mux)
	defer up.Close()
	u, _ := url.Parse(up.URL)
	s, fake := clockedStore(t, 8)
	body := `{"amount":"5"}`
	deadClaim(t, s, "alice", "slow-1", body, resolveEndpoint, 10*time.Second) // a worker that claimed and died
	_, srv := serveGateway(t, "w", s, fake, u, resolveEndpoint)
	fake.Advance(11 * time.Second)
	alice := token(t, "alice")
	first := make(chan string, 1)
	go func() {
		st, hd, b := do(t, post(t, srv.URL+"/v1/things", alice, "slow-1", body))
		first <- describe(st, hd, b)
	}()
	<-started                                                // the takeover resolved (not run) and is inside its Execute
	heartbeatThrough(fake, 12*time.Second, 10*time.Second/3) // longer than the lease
	st, hd, b := do(t, post(t, srv.URL+"/v1/things", alice, "slow-1", body))
	close(release)
	f := <-first
	if runs.Load() != 1 {
		t.Fatalf("upstream ran %d times (takeover 1: %s; takeover 2: %s)", runs.Load(), f, describe(st, hd, b))
	}
}
