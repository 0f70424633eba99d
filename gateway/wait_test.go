package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/internal/testutil"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// heldRun is an upstream whose runs of key "held-1" hold until released,
// counting every run.
type heldRun struct {
	runs    atomic.Int64
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

// newHeldRun returns a held upstream. Its server must be registered for
// cleanup before it: the run is released when the test ends at the latest
// (so that a failing test does not hang on it), before the server closes.
func newHeldRun(t testing.TB) *heldRun {
	return &heldRun{started: make(chan struct{}, 1), release: make(chan struct{})}
}

// free releases the held run.
func (h *heldRun) free() { h.once.Do(func() { close(h.release) }) }

func (h *heldRun) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := h.runs.Add(1)
	if r.Header.Get("Idempotency-Key") == "held-1" {
		h.started <- struct{}{}
		<-h.release
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", "/v1/things/t1")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"id":"t1","run":%d}`, n)
}

// serveClocked serves h coordinated by a gateway on the fake clock fake
// (the store s is on it too), with create-thing configured by extra.
func serveClocked(t testing.TB, s store.Store, fake *clock.Fake, extra string, h http.Handler) (*gateway.Gateway, *httptest.Server) {
	t.Helper()
	return serveConfig(t, gateway.Config{Region: "test", Worker: "w", Store: s, Auth: verifier(t),
		Endpoints: endpoints(t, extra), Clock: fake}, h)
}

// serveConfig serves gateway.Wrap(cfg, h), started, until the test ends.
func serveConfig(t testing.TB, cfg gateway.Config, h http.Handler) (*gateway.Gateway, *httptest.Server) {
	t.Helper()
	g, err := gateway.Wrap(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	startGateway(t, g)
	srv := httptest.NewServer(g)
	t.Cleanup(func() { g.Close() }) // after the server closed
	t.Cleanup(srv.Close)
	return g, srv
}

// untilWaiting returns once g holds n requests waiting for runs in flight.
func untilWaiting(t testing.TB, g *gateway.Gateway, n int) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, func() error {
		if got := gateway.Waiting(g); got != n {
			return fmt.Errorf("%d requests waiting, want %d", got, n)
		}
		return nil
	})
}

type answer struct {
	status int
	header http.Header
	body   string
}

func send(t testing.TB, req *http.Request) <-chan answer {
	out := make(chan answer, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- answer{body: err.Error()}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			out <- answer{body: err.Error()}
			return
		}
		out <- answer{resp.StatusCode, resp.Header, string(b)}
	}()
	return out
}

// TestARetryDuringA2sRunIsAnsweredWithTheRunsAnswerWithinItsWait: with
// in_progress.wait 3s, a retry that arrives while the first run is in
// flight (the run takes 2 s on the gateway's clock) waits for it and gets
// its answer, 201 with the run's body, replayed, and the upstream runs
// once; with wait 1s the same retry gets 409 with Retry-After once its
// second is up, and the run still answers its own client.
func TestARetryDuringA2sRunIsAnsweredWithTheRunsAnswerWithinItsWait(t *testing.T) {
	for _, tc := range []struct {
		wait       string
		wantStatus int
	}{{"3s", http.StatusCreated}, {"1s", http.StatusConflict}} {
		t.Run("wait "+tc.wait, func(t *testing.T) {
			s, fake := clockedStore(t, 8)
			up := newHeldRun(t)
			g, srv := serveClocked(t, s, fake, "    lease: 30s\n    in_progress: {wait: "+tc.wait+"}\n", up)
			t.Cleanup(up.free)
			alice := token(t, "alice")
			first := send(t, post(t, srv.URL+"/v1/things", alice, "held-1", `{"n":1}`))
			<-up.started
			retry := send(t, post(t, srv.URL+"/v1/things", alice, "held-1", `{"n":1}`))
			untilWaiting(t, g, 1)
			fake.Advance(2 * time.Second) // the run takes 2 s
			if tc.wantStatus == http.StatusConflict {
				got := <-retry // its second was up during the run
				if got.status != http.StatusConflict || got.header.Get("Retry-After") == "" ||
					got.header.Get(gateway.HeaderKeyStatus) != gateway.KeyStatusInProgress {
					t.Errorf("retry with wait %s: %d %q Retry-After %q, want 409 in-progress with Retry-After", tc.wait,
						got.status, got.body, got.header.Get("Retry-After"))
				}
			}
			up.free()
			f := <-first
			if f.status != http.StatusCreated || f.header.Get(gateway.HeaderKeyStatus) != gateway.KeyStatusCreated {
				t.Fatalf("first run: %d %q", f.status, f.body)
			}
			if tc.wantStatus == http.StatusCreated {
				got := <-retry
				if got.status != http.StatusCreated || got.body != f.body || got.header.Get(gateway.HeaderReplayed) != "true" ||
					got.header.Get(gateway.HeaderKeyStatus) != gateway.KeyStatusReplayed ||
					got.header.Get(gateway.HeaderOperationID) != f.header.Get(gateway.HeaderOperationID) {
					t.Errorf("retry with wait %s: %d %q replayed %q status %q, want the run's 201 %q replayed", tc.wait,
						got.status, got.body, got.header.Get(gateway.HeaderReplayed), got.header.Get(gateway.HeaderKeyStatus), f.body)
				}
			}
			if n := up.runs.Load(); n != 1 {
				t.Errorf("upstream ran %d times, want once", n)
			}
			if n := gateway.Waiting(g); n != 0 {
				t.Errorf("%d requests still waiting", n)
			}
		})
	}
}

// TestAThousandWaitersHoldNoDatabaseConnection: 1,000 retries waiting on
// one run in flight hold no connection of the store's pool (4), nor make
// it grow past its size; the 1,001st, over the endpoint's max_waiters, is
// answered 409 at once; when the run finishes every waiter gets its
// answer, and the upstream ran once.
func TestAThousandWaitersHoldNoDatabaseConnection(t *testing.T) {
	const waiters, maxConns = 1000, 4
	s, fake := clockedStore(t, maxConns)
	up := newHeldRun(t)
	g, srv := serveClocked(t, s, fake, fmt.Sprintf("    lease: 30s\n    in_progress: {wait: 30s, max_waiters: %d}\n", waiters), up)
	t.Cleanup(up.free)
	alice := token(t, "alice")
	first, answers := heldWithWaiters(t, g, srv, up, alice, waiters)
	stat := s.Pool().Stat()
	if stat.AcquiredConns() != 0 || stat.TotalConns() > maxConns || stat.MaxConns() != maxConns {
		t.Errorf("with %d waiters: %d connections acquired, %d open (max %d), want none acquired and at most %d",
			waiters, stat.AcquiredConns(), stat.TotalConns(), stat.MaxConns(), maxConns)
	}
	over := <-send(t, post(t, srv.URL+"/v1/things", alice, "held-1", `{}`))
	if over.status != http.StatusConflict || over.header.Get("Retry-After") == "" {
		t.Errorf("waiter %d: %d %q, want 409 at once", waiters+1, over.status, over.body)
	}
	up.free()
	f := <-first
	var wrong int
	for i, a := range answers {
		got := <-a
		if got.status != http.StatusCreated || got.body != f.body || got.header.Get(gateway.HeaderReplayed) != "true" {
			if wrong++; wrong <= 3 {
				t.Errorf("waiter %d: %d %q, want the run's 201 %q replayed", i, got.status, got.body, f.body)
			}
		}
	}
	if wrong > 0 {
		t.Errorf("%d of %d waiters got another answer", wrong, waiters)
	}
	if stat := s.Pool().Stat(); stat.TotalConns() > maxConns {
		t.Errorf("%d connections open, want at most %d", stat.TotalConns(), maxConns)
	}
	if n := up.runs.Load(); n != 1 {
		t.Errorf("upstream ran %d times, want once", n)
	}
}

// TestAWaiterThatHangsUpStopsWaiting: a client that goes away while its
// retry waits is no longer held, and the run it waited on is unaffected.
func TestAWaiterThatHangsUpStopsWaiting(t *testing.T) {
	s, fake := clockedStore(t, 8)
	up := newHeldRun(t)
	g, srv := serveClocked(t, s, fake, "    lease: 30s\n    in_progress: {wait: 30s}\n", up)
	t.Cleanup(up.free)
	alice := token(t, "alice")
	first := send(t, post(t, srv.URL+"/v1/things", alice, "held-1", `{}`))
	<-up.started
	ctx, cancel := context.WithCancel(context.Background())
	retry := send(t, post(t, srv.URL+"/v1/things", alice, "held-1", `{}`).WithContext(ctx))
	untilWaiting(t, g, 1)
	cancel()
	<-retry
	untilWaiting(t, g, 0)
	up.free()
	if f := <-first; f.status != http.StatusCreated {
		t.Fatalf("first run: %d %q", f.status, f.body)
	}
	if n := up.runs.Load(); n != 1 {
		t.Errorf("upstream ran %d times, want once", n)
	}
}

// TestWithoutAWaitARetryIsAnswered409AtOnce: the default (no
// in_progress) is today's 409, with nobody held.
func TestWithoutAWaitARetryIsAnswered409AtOnce(t *testing.T) {
	s, fake := clockedStore(t, 8)
	up := newHeldRun(t)
	g, srv := serveClocked(t, s, fake, "    lease: 30s\n", up)
	t.Cleanup(up.free)
	alice := token(t, "alice")
	first := send(t, post(t, srv.URL+"/v1/things", alice, "held-1", `{}`))
	<-up.started
	got := <-send(t, post(t, srv.URL+"/v1/things", alice, "held-1", `{}`))
	if got.status != http.StatusConflict || gateway.Waiting(g) != 0 {
		t.Errorf("retry: %d %q, want 409 at once", got.status, got.body)
	}
	up.free()
	<-first
}

// TestARetryLandingInAnotherRegionWaitsAtTheOwner: a retry that lands in
// west for an actor east owns is forwarded to east, which holds it for
// the run in flight there (the forward's own timeout covers the wait) and
// answers the run's 201; the upstream ran once, in east.
func TestARetryLandingInAnotherRegionWaitsAtTheOwner(t *testing.T) {
	s := openStore(t, 8)
	up := newHeldRun(t)
	east, west := startRegions(t, s, "east", regionsOptions{endpoint: "    in_progress: {wait: 30s}\n",
		upstream: func(name string) http.Handler { return up }})
	t.Cleanup(up.free)
	alice := token(t, "alice")
	first := send(t, post(t, east.url+"/v1/things", alice, "held-1", `{}`))
	<-up.started
	retry := send(t, post(t, west.url+"/v1/things", alice, "held-1", `{}`))
	untilWaiting(t, east.gw, 1)
	up.free()
	f, got := <-first, <-retry
	if f.status != http.StatusCreated {
		t.Fatalf("first run: %d %q", f.status, f.body)
	}
	if got.status != http.StatusCreated || got.body != f.body || got.header.Get(gateway.HeaderReplayed) != "true" ||
		got.header.Get(gateway.HeaderRegion) != "east" || got.header.Get(gateway.HeaderKeyStatus) != gateway.KeyStatusReplayed {
		t.Errorf("retry through west: %d %q region %q status %q, want east's 201 %q replayed", got.status, got.body,
			got.header.Get(gateway.HeaderRegion), got.header.Get(gateway.HeaderKeyStatus), f.body)
	}
	if n := up.runs.Load(); n != 1 || west.upstream.Load() != 0 {
		t.Errorf("upstream ran %d times (west's %d), want once, in east", n, west.upstream.Load())
	}
}

// TestAWaitedRetryTakesOneTokenOfTheLimit: a retry that waits for the run
// and then gets its replay is one answer given without the upstream: it
// takes one token of the per-actor limit, not one for the wait and one
// for the replay.
func TestAWaitedRetryTakesOneTokenOfTheLimit(t *testing.T) {
	s, fake := clockedStore(t, 8)
	up := newHeldRun(t)
	g, srv := serveClocked(t, s, fake, "    lease: 30s\n    in_progress: {wait: 3s}\n    limit: {rate: 1/h}\n", up)
	t.Cleanup(up.free)
	alice := token(t, "alice")
	first := send(t, post(t, srv.URL+"/v1/things", alice, "held-1", `{}`))
	<-up.started
	retry := send(t, post(t, srv.URL+"/v1/things", alice, "held-1", `{}`))
	untilWaiting(t, g, 1)
	up.free()
	f, got := <-first, <-retry
	if got.status != http.StatusCreated || got.body != f.body || got.header.Get(gateway.HeaderReplayed) != "true" {
		t.Errorf("waited retry: %d %q, want the run's 201 replayed (one token)", got.status, got.body)
	}
	if again := <-send(t, post(t, srv.URL+"/v1/things", alice, "held-1", `{}`)); again.status != http.StatusTooManyRequests {
		t.Errorf("next replay: %d, want 429 (the bucket of 1 was used once)", again.status)
	}
}

// countBegins is the real store, counting its claims.
type countBegins struct {
	*sqlstore.Store
	n atomic.Int64
}

func (s *countBegins) Begin(ctx context.Context, req store.ClaimRequest) (store.Claim, error) {
	s.n.Add(1)
	return s.Store.Begin(ctx, req)
}

// TestWaitersWokenByAFinishReplayWithoutClaimingAgain: the retries held
// for a run in flight get its answer from the one record their shared
// watch read when the run finished, not from a claim each: one finish
// wakes any number of waiters for a bounded number of store reads, so a
// crowd of retries cannot exhaust the pool (or the store's time budget)
// the moment the run they wait on ends.
func TestWaitersWokenByAFinishReplayWithoutClaimingAgain(t *testing.T) {
	const waiters = 50
	s, fake := clockedStore(t, 4)
	counted := &countBegins{Store: s}
	up := newHeldRun(t)
	g, srv := serveClocked(t, counted, fake, "    lease: 30s\n    in_progress: {wait: 30s}\n", up)
	t.Cleanup(up.free)
	alice := token(t, "alice")
	first, answers := heldWithWaiters(t, g, srv, up, alice, waiters)
	before := counted.n.Load()
	up.free()
	f := <-first
	for i, a := range answers {
		got := <-a
		if got.status != http.StatusCreated || got.body != f.body || got.header.Get(gateway.HeaderReplayed) != "true" {
			t.Errorf("waiter %d: %d %q, want the run's 201 %q replayed", i, got.status, got.body, f.body)
		}
	}
	if n := counted.n.Load() - before; n != 0 {
		t.Errorf("%d claims after the run finished, want none: each of %d waiters claimed again", n, waiters)
	}
	if n := up.runs.Load(); n != 1 {
		t.Errorf("upstream ran %d times, want once", n)
	}
}

// heldWithWaiters sends the first run of key "held-1" (held by up), then n
// retries of it, and returns once all n wait for that run: the run's
// answer and the retries' answers, to come.
func heldWithWaiters(t *testing.T, g *gateway.Gateway, srv *httptest.Server, up *heldRun, auth string, n int) (first <-chan answer, answers []<-chan answer) {
	t.Helper()
	first = send(t, post(t, srv.URL+"/v1/things", auth, "held-1", `{}`))
	<-up.started
	answers = make([]<-chan answer, n)
	for i := range answers {
		answers[i] = send(t, post(t, srv.URL+"/v1/things", auth, "held-1", `{}`))
	}
	untilWaiting(t, g, n)
	return first, answers
}
