package gateway_test

import (
	"context"
	"errors"
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
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// clockedStore opens a store whose lease time is the returned fake clock:
// give the same clock to the gateway, and move it instead of sleeping.
func clockedStore(t testing.TB, maxConns int32) (*sqlstore.Store, *clock.Fake) {
	t.Helper()
	fake := clock.NewFake(time.Now())
	return storeOnClock(t, fake, maxConns), fake
}

// stallBegin is the real store, except that the first claim it wins
// stalls after committing, until released: a worker paused (GC, slow
// network) between its claim and its send.
type stallBegin struct {
	*sqlstore.Store
	stalled chan struct{}
	release chan struct{}
	once    sync.Once
}

func (s *stallBegin) Begin(ctx context.Context, req store.ClaimRequest) (store.Claim, error) {
	c, err := s.Store.Begin(ctx, req)
	if err == nil && c.Outcome == store.FirstRun {
		s.once.Do(func() {
			close(s.stalled)
			<-s.release
		})
	}
	return c, err
}

// countHeartbeats is the real store, counting Heartbeat calls.
type countHeartbeats struct {
	*sqlstore.Store
	n atomic.Int64
}

func (s *countHeartbeats) Heartbeat(ctx context.Context, l *store.Lease) error {
	s.n.Add(1)
	return s.Store.Heartbeat(ctx, l)
}

// chargeUpstream is an upstream with a resolve path: it counts runs and
// answers for the operations it ran.
func chargeUpstream(t testing.TB, runs *atomic.Int64) *url.URL {
	var done sync.Map
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/things", func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		done.Store(r.Header.Get(gateway.HeaderOperationID), true)
		w.Header().Set("Content-Type", "application/json")
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
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	return u
}

const resolveEndpoint = "    lease: 10s\n    upstream_timeout: 5s\n    resolve_path: /internal/operations/{operation_id}\n"

// serveGateway serves a proxying gateway named worker on s with clock c.
func serveGateway(t testing.TB, worker string, s store.Store, c clock.Clock, u *url.URL, extra string) (*gateway.Gateway, *httptest.Server) {
	t.Helper()
	g, err := gateway.New(gateway.Config{Region: "test", Worker: worker, Store: s, Auth: verifier(t),
		Endpoints: endpoints(t, extra), Next: gateway.NewProxy(u, nil), Clock: c})
	return g, served(t, g, err)
}

// TestStalledWorkerNeverSendsAfterTakeover: a worker claims a key and
// stalls past its lease before sending. A retry on another instance takes
// the operation over, asks the resolve path (not run), and runs it. When
// the stalled worker wakes up it must prove it still owns the lease
// before sending, find it does not, and send nothing.
func TestStalledWorkerNeverSendsAfterTakeover(t *testing.T) {
	var runs atomic.Int64
	u := chargeUpstream(t, &runs)
	s, fake := clockedStore(t, 16)
	stalling := &stallBegin{Store: s, stalled: make(chan struct{}), release: make(chan struct{})}
	_, slow := serveGateway(t, "slow", stalling, fake, u, resolveEndpoint)
	_, live := serveGateway(t, "live", s, fake, u, resolveEndpoint)
	alice := token(t, "alice")
	body := `{"amount":"5"}`

	first := make(chan string, 1)
	go func() {
		st, hd, b := do(t, post(t, slow.URL+"/v1/things", alice, "charge-1", body))
		first <- describe(st, hd, b)
	}()
	<-stalling.stalled
	fake.Advance(11 * time.Second) // the stalled worker's lease runs out
	st, hd, b := do(t, post(t, live.URL+"/v1/things", alice, "charge-1", body))
	if st != http.StatusCreated || runs.Load() != 1 {
		t.Fatalf("takeover: %s after %d runs, want 201 from the one run", describe(st, hd, b), runs.Load())
	}
	close(stalling.release)
	f := <-first
	if runs.Load() != 1 {
		t.Fatalf("upstream ran %d times (stalled worker answered %s): it sent on a lease taken over", runs.Load(), f)
	}
	if f != describe(http.StatusCreated, http.Header{"Idempotent-Replayed": {"true"}}, `{"charged":true}`) {
		t.Errorf("stalled worker answered %s, want the taker's 201 replayed", f)
	}
}

// TestFreshClaimSendsWithoutAnExtraStoreCall: proving the lease costs a
// first run nothing when the claim was just made.
func TestFreshClaimSendsWithoutAnExtraStoreCall(t *testing.T) {
	var runs atomic.Int64
	u := chargeUpstream(t, &runs)
	s, fake := clockedStore(t, 8)
	counting := &countHeartbeats{Store: s}
	_, srv := serveGateway(t, "w", counting, fake, u, resolveEndpoint)
	if st, hd, b := do(t, post(t, srv.URL+"/v1/things", token(t, "alice"), "charge-2", `{}`)); st != http.StatusCreated {
		t.Fatalf("first run: %s", describe(st, hd, b))
	}
	if n := counting.n.Load(); n != 0 {
		t.Fatalf("%d heartbeats on a fresh claim, want none", n)
	}
}

// failHeartbeat is the real store whose Heartbeat fails while down is set.
type failHeartbeat struct {
	*sqlstore.Store
	down atomic.Bool
}

func (s *failHeartbeat) Heartbeat(ctx context.Context, l *store.Lease) error {
	if s.down.Load() {
		return errors.New("injected: store unreachable")
	}
	return s.Store.Heartbeat(ctx, l)
}

// TestTakeoverNeverSendsOnALeaseLostDuringItsResolve: a takeover asks the
// resolve path; while it waits, its heartbeats fail and its lease runs
// out; another retry takes over, resolves "not run" and runs the intent.
// When the first takeover's resolve then says "not run" too, it must prove
// it still owns the lease before sending, find it does not, and send
// nothing.
func TestTakeoverNeverSendsOnALeaseLostDuringItsResolve(t *testing.T) {
	var runs, resolves atomic.Int64
	var done sync.Map
	resolving := make(chan struct{})
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/things", func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		done.Store(r.Header.Get(gateway.HeaderOperationID), true)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"charged":true}`)
	})
	mux.HandleFunc("GET /internal/operations/{id}", func(w http.ResponseWriter, r *http.Request) {
		if resolves.Add(1) == 1 {
			close(resolving)
			<-release
			http.NotFound(w, r) // looked up before the other takeover ran it
			return
		}
		if _, ok := done.Load(r.PathValue("id")); !ok {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, resolutionBody(201, `{"charged":true}`))
	})
	up := httptest.NewServer(mux)
	defer up.Close()
	u, _ := url.Parse(up.URL)
	s, fake := clockedStore(t, 16)
	body := `{"amount":"5"}`
	deadClaim(t, s, "alice", "charge-3", body, resolveEndpoint, 10*time.Second)
	fake.Advance(11 * time.Second)
	flaky := &failHeartbeat{Store: s}
	_, slow := serveGateway(t, "slow", flaky, fake, u, resolveEndpoint)
	_, live := serveGateway(t, "live", s, fake, u, resolveEndpoint)
	alice := token(t, "alice")

	first := make(chan string, 1)
	go func() {
		st, hd, b := do(t, post(t, slow.URL+"/v1/things", alice, "charge-3", body))
		first <- describe(st, hd, b)
	}()
	<-resolving
	flaky.down.Store(true)
	fake.Advance(11 * time.Second) // one heartbeat, failing; the lease runs out
	fake.BlockUntil(1)
	st, hd, b := do(t, post(t, live.URL+"/v1/things", alice, "charge-3", body))
	if st != http.StatusCreated || runs.Load() != 1 {
		t.Fatalf("second takeover: %s after %d runs, want 201 from the one run", describe(st, hd, b), runs.Load())
	}
	flaky.down.Store(false)
	close(release)
	f := <-first
	if runs.Load() != 1 {
		t.Fatalf("upstream ran %d times (first takeover answered %s): it sent on a lease taken over", runs.Load(), f)
	}
}
