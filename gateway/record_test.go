package gateway_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// flakyFinish is the real store whose Finish fails while down is set: the
// store unreachable from one instance for a while.
type flakyFinish struct {
	*sqlstore.Store
	down atomic.Bool
}

func (f *flakyFinish) Finish(ctx context.Context, l *store.Lease, res store.Result) error {
	if f.down.Load() {
		return errors.New("injected: store unreachable")
	}
	return f.Store.Finish(ctx, l, res)
}

// advanceUntil moves fake forward by step whenever something waits on
// it, until done is closed: backoff waits pass without sleeping.
func advanceUntil(fake *clock.Fake, step time.Duration, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		default:
		}
		if fake.Waiters() > 0 {
			fake.Advance(step)
		}
		runtime.Gosched()
	}
}

// createdUpstream answers 201 and counts runs.
func createdUpstream(t testing.TB, runs *atomic.Int64) *url.URL {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"thing_1"}`)
	}))
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	return u
}

// TestAcknowledgedResultIsRecordedAfterAStoreBlip: the upstream answered
// 201 and the client got it, but recording the result failed once. The
// gateway holds the answer and records it again: the key is COMPLETED and
// retries replay the 201, instead of IN_PROGRESS and then OUTCOME_UNKNOWN
// for ever.
func TestAcknowledgedResultIsRecordedAfterAStoreBlip(t *testing.T) {
	var runs atomic.Int64
	u := createdUpstream(t, &runs)
	s, fake := clockedStore(t, 8)
	blip := &failFinish{Store: s}
	blip.n.Store(1)
	g, srv := serveGateway(t, "w", blip, fake, u, "")
	alice := token(t, "alice")
	if st, hd, b := do(t, post(t, srv.URL+"/v1/things", alice, "blip-1", `{}`)); st != http.StatusCreated {
		t.Fatalf("first run: %s", describe(st, hd, b))
	}
	closed := make(chan struct{})
	go func() { g.Close(); close(closed) }()
	advanceUntil(fake, time.Second, closed)
	rec, err := s.Read(context.Background(), reviewScope(t, "alice", "blip-1"))
	if err != nil || rec.State != idempotency.Completed {
		t.Fatalf("record %s (%v) after the upstream's 201 and one failed Finish, want COMPLETED", rec.State, err)
	}
	_, srv2 := serveGateway(t, "w2", s, fake, u, "")
	st, hd, b := do(t, post(t, srv2.URL+"/v1/things", alice, "blip-1", `{}`))
	if st != http.StatusCreated || hd.Get("Idempotent-Replayed") != "true" || runs.Load() != 1 {
		t.Fatalf("retry %s after %d runs, want the 201 replayed", describe(st, hd, b), runs.Load())
	}
}

// TestTakenOverUnknownOutcomeIsSettledWithTheHeldAnswer: the worker that
// got the upstream's 201 cannot record it for longer than its lease; a
// retry on another instance takes over and, with no resolve path, can
// only record OUTCOME_UNKNOWN. When the store is back, the first worker
// finds it lost the lease and settles the unknown outcome with the answer
// it holds: retries then replay the one run's 201.
func TestTakenOverUnknownOutcomeIsSettledWithTheHeldAnswer(t *testing.T) {
	var runs atomic.Int64
	u := createdUpstream(t, &runs)
	s, fake := clockedStore(t, 16)
	flaky := &flakyFinish{Store: s}
	flaky.down.Store(true)
	const lease = "    lease: 10s\n"
	held, heldSrv := serveGateway(t, "held", flaky, fake, u, lease)
	_, liveSrv := serveGateway(t, "live", s, fake, u, lease)
	alice := token(t, "alice")
	if st, hd, b := do(t, post(t, heldSrv.URL+"/v1/things", alice, "held-1", `{}`)); st != http.StatusCreated {
		t.Fatalf("first run: %s", describe(st, hd, b))
	}
	fake.Advance(11 * time.Second) // the lease runs out while the result is unrecorded
	st, hd, b := do(t, post(t, liveSrv.URL+"/v1/things", alice, "held-1", `{}`))
	if st != http.StatusGatewayTimeout {
		t.Fatalf("takeover: %s, want 504 (sent, no resolve path: unknown)", describe(st, hd, b))
	}
	flaky.down.Store(false) // the store is back for the first worker
	closed := make(chan struct{})
	go func() { held.Close(); close(closed) }()
	advanceUntil(fake, time.Second, closed)
	st, hd, b = do(t, post(t, liveSrv.URL+"/v1/things", alice, "held-1", `{}`))
	if st != http.StatusCreated || hd.Get("Idempotent-Replayed") != "true" || runs.Load() != 1 {
		t.Fatalf("retry %s after %d runs, want the one run's 201 replayed", describe(st, hd, b), runs.Load())
	}
}

// TestAnUnrecordedResultIsNeverAcknowledgedWhereAResolvePathCanContradictIt:
// the upstream answered 201 but recording the result failed. On an
// endpoint with a resolve path, whoever settles the record later (this
// worker's background re-recording, or a takeover asking the resolve
// path, whose body may differ) decides the answer every retry gets, so
// the client is not handed the unrecorded 201: it gets 503 with
// Retry-After, the operation id and new_key_safe false, and its retry
// replays the recorded answer. The upstream runs once.
func TestAnUnrecordedResultIsNeverAcknowledgedWhereAResolvePathCanContradictIt(t *testing.T) {
	var runs atomic.Int64
	u := createdUpstream(t, &runs)
	s, fake := clockedStore(t, 8)
	blip := &failFinish{Store: s}
	blip.n.Store(1)
	g, srv := serveGateway(t, "w", blip, fake, u, resolveEndpoint)
	alice := token(t, "alice")
	st, hd, b := do(t, post(t, srv.URL+"/v1/things", alice, "unrecorded-1", `{}`))
	if st != http.StatusServiceUnavailable || hd.Get("Retry-After") == "" || hd.Get(gateway.HeaderOperationID) == "" ||
		!strings.Contains(b, `"new_key_safe":false`) {
		// Errorf, not Fatalf: Close below must still end the re-recording.
		t.Errorf("first run with its result unrecorded: %s, want 503 with Retry-After, the operation id and new_key_safe false",
			describe(st, hd, b))
	}
	closed := make(chan struct{})
	go func() { g.Close(); close(closed) }() // Close waits for the background re-recording
	advanceUntil(fake, time.Second, closed)
	_, srv2 := serveGateway(t, "w2", s, fake, u, resolveEndpoint)
	st, hd, b = do(t, post(t, srv2.URL+"/v1/things", alice, "unrecorded-1", `{}`))
	if st != http.StatusCreated || hd.Get("Idempotent-Replayed") != "true" || runs.Load() != 1 {
		t.Fatalf("retry %s after %d runs, want the recorded 201 replayed and one run", describe(st, hd, b), runs.Load())
	}
}
