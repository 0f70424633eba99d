package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/crdb"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/idempotency"
)

// TestReviewMiddlewareHandlerOutlivesLease: in middleware mode
// handlerExecutor ignores upstream_timeout and nothing heartbeats the lease,
// so the config check "lease > upstream_timeout" protects nothing. A handler
// slower than the lease is taken over by a retry while it still runs; the
// takeover asks the resolve path, which (correctly) cannot find a committed
// operation yet and answers 404, and the takeover runs the handler again.
func TestReviewMiddlewareHandlerOutlivesLease(t *testing.T) {
	var runs atomic.Int64
	var done sync.Map
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/things", func(w http.ResponseWriter, r *http.Request) {
		if runs.Add(1) == 1 {
			time.Sleep(1500 * time.Millisecond) // slow, but alive
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
	g, err := gateway.Wrap(gateway.Config{Region: "test", Worker: "w", Store: store(t, 8), Auth: verifier(t),
		Endpoints: reviewEndpoints(t, "    lease: 1s\n    upstream_timeout: 500ms\n"+
			"    resolve_path: /internal/operations/{operation_id}\n")}, mux)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	srv := httptest.NewServer(g)
	defer srv.Close()
	alice := token(t, "alice")
	first := make(chan string, 1)
	go func() {
		st, hd, b := do(t, post(t, srv.URL+"/v1/things", alice, "charge-1", `{"amount":"5"}`))
		first <- describe(st, hd, b)
	}()
	time.Sleep(1200 * time.Millisecond) // past the lease, the first handler still running
	st, hd, b := do(t, post(t, srv.URL+"/v1/things", alice, "charge-1", `{"amount":"5"}`))
	f := <-first
	if runs.Load() != 1 {
		t.Fatalf("handler ran %d times (first answer %s, retry %s): a live handler was taken over", runs.Load(), f, describe(st, hd, b))
	}
}

// TestReviewTakeoverOfUnsentClaimHeldForever: a worker claimed a key and
// died before sending anything upstream (or Begin's answer was lost, or
// the request context died). The gateway never records a stage, so a
// takeover cannot tell "never sent" from "sent": on an endpoint without a
// resolve path it records OUTCOME_UNKNOWN and the key answers 409 for ever
// (new_key_safe=false), although nothing ran.
func TestReviewTakeoverOfUnsentClaimHeldForever(t *testing.T) {
	ctx := context.Background()
	var runs atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{}`)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	s := store(t, 8)
	eps := reviewEndpoints(t, "    lease: 1s\n    upstream_timeout: 500ms\n")
	body := `{"amount":"5"}`
	fp, err := idempotency.ComputeFingerprint(idempotency.Request{Method: "POST", Path: "/v1/things",
		ContentType: "application/json", Body: []byte(body)}, eps[0].Policy().Fingerprint)
	if err != nil {
		t.Fatal(err)
	}
	// The claim of a worker that died before it sent the request upstream.
	c, err := s.Begin(ctx, crdb.ClaimRequest{Scope: reviewScope(t, "alice", "unsent-1"), Fingerprint: fp,
		Token:  fencing.Token{Shard: fencing.ShardOf("t/alice", fencing.DefaultShards), Epoch: 1, Region: "test"},
		Worker: "dead", Lease: time.Second, TTL: time.Hour})
	if err != nil || c.Outcome != crdb.FirstRun {
		t.Fatalf("setup claim: %v %v", c.Outcome, err)
	}
	g, err := gateway.New(gateway.Config{Region: "test", Worker: "w", Store: s, Auth: verifier(t),
		Endpoints: eps, Next: gateway.NewProxy(u, nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	srv := httptest.NewServer(g)
	defer srv.Close()
	time.Sleep(1100 * time.Millisecond)
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

// TestReviewTakeoverResolvePlusExecuteOutlivesLease: config only checks
// lease > upstream_timeout, but a takeover spends up to two upstream calls
// (Resolve, then Execute) under one lease that nothing heartbeats. Here
// lease 1s, upstream_timeout 900ms (accepted by config): the takeover's
// lease runs out during its Execute, a second retry takes over, its Resolve
// cannot see the first Execute yet (404), and the intent runs twice.
func TestReviewTakeoverResolvePlusExecuteOutlivesLease(t *testing.T) {
	ctx := context.Background()
	var runs atomic.Int64
	var done sync.Map
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/things", func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		time.Sleep(800 * time.Millisecond)
		done.Store(r.Header.Get(gateway.HeaderOperationID), true)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"charged":true}`)
	})
	mux.HandleFunc("GET /internal/operations/{id}", func(w http.ResponseWriter, r *http.Request) {
		_, ok := done.Load(r.PathValue("id"))
		time.Sleep(800 * time.Millisecond) // a slow but healthy lookup
		if !ok {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, resolutionBody(201, `{"charged":true}`))
	})
	up := httptest.NewServer(mux)
	defer up.Close()
	u, _ := url.Parse(up.URL)
	s := store(t, 8)
	eps := reviewEndpoints(t, "    lease: 1s\n    upstream_timeout: 900ms\n    resolve_path: /internal/operations/{operation_id}\n")
	body := `{"amount":"5"}`
	fp, err := idempotency.ComputeFingerprint(idempotency.Request{Method: "POST", Path: "/v1/things",
		ContentType: "application/json", Body: []byte(body)}, eps[0].Policy().Fingerprint)
	if err != nil {
		t.Fatal(err)
	}
	// A worker that claimed and died.
	if c, err := s.Begin(ctx, crdb.ClaimRequest{Scope: reviewScope(t, "alice", "slow-1"), Fingerprint: fp,
		Token:  fencing.Token{Shard: fencing.ShardOf("t/alice", fencing.DefaultShards), Epoch: 1, Region: "test"},
		Worker: "dead", Lease: time.Second, TTL: time.Hour}); err != nil || c.Outcome != crdb.FirstRun {
		t.Fatalf("setup claim: %v %v", c.Outcome, err)
	}
	g, err := gateway.New(gateway.Config{Region: "test", Worker: "w", Store: s, Auth: verifier(t),
		Endpoints: eps, Next: gateway.NewProxy(u, nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	srv := httptest.NewServer(g)
	defer srv.Close()
	time.Sleep(1100 * time.Millisecond)
	alice := token(t, "alice")
	first := make(chan string, 1)
	go func() {
		st, hd, b := do(t, post(t, srv.URL+"/v1/things", alice, "slow-1", body))
		first <- describe(st, hd, b)
	}()
	time.Sleep(1100 * time.Millisecond) // the first takeover is inside its Execute, its lease gone
	st, hd, b := do(t, post(t, srv.URL+"/v1/things", alice, "slow-1", body))
	f := <-first
	if runs.Load() != 1 {
		t.Fatalf("upstream ran %d times (takeover 1: %s; takeover 2: %s)", runs.Load(), f, describe(st, hd, b))
	}
}
