package gateway

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// A waiter's operation record is read again after waitPollFirst, then
// after doubling waits up to waitPollMax. The first read comes soon, since
// most runs a retry overtakes are about to finish; the cap keeps one
// operation to at most one point read a second, whatever its waiters
// number, and a finish seen at most a second late from another instance
// (this instance's own finishes wake its waiters at once: kick).
const (
	waitPollFirst = 50 * time.Millisecond
	waitPollMax   = time.Second
)

// waitOutcome is how a wait for a run in flight ended.
type waitOutcome int

const (
	// waitFinished: the record left the running state, or its lease
	// expired: claim again (a replay, or a takeover).
	waitFinished waitOutcome = iota + 1
	// waitTimedOut: the budget ran out with the run still in flight.
	waitTimedOut
	// waitGone: the client went away.
	waitGone
	// waitFull: the endpoint's waiters are at their limit.
	waitFull
)

// waits holds the requests waiting for runs in flight. A waiter holds no
// database connection and no lock: all waiters of one operation share one
// watch, whose single goroutine reads the record by a point lookup (a
// pooled connection for the length of one query) with backoff on the
// gateway's clock; a finish recorded by this instance kicks the watch to
// read at once. Nothing here needs LISTEN/NOTIFY or a changefeed, so it
// works the same on PostgreSQL and CockroachDB, from any region that reads
// the store.
type waits struct {
	store  store.Store
	clock  clock.Clock
	log    *slog.Logger
	limits map[string]int // by endpoint name
	mu     sync.Mutex
	count  map[string]int // waiters by endpoint
	ops    map[uuid.UUID]*watch
	wg     sync.WaitGroup // the watches' goroutines
}

// watch is the shared wait on one operation.
type watch struct {
	refs int
	kick chan struct{} // read the record now (capacity 1)
	done chan struct{} // closed once the record is seen not running
	last store.Record  // the latest record read; guarded by waits.mu
	stop context.CancelFunc
}

func newWaits(st store.Store, c clock.Clock, log *slog.Logger, eps []config.Endpoint) *waits {
	w := &waits{store: st, clock: c, log: log, limits: map[string]int{}, count: map[string]int{},
		ops: map[uuid.UUID]*watch{}}
	for _, ep := range eps {
		w.limits[ep.Name] = ep.InProgress.MaxWaitersOrDefault()
	}
	return w
}

// wait waits until rec's operation is no longer running, until, or ctx's
// end (the client gone), whichever comes first. It returns the latest
// record read (rec itself if none was) and why it returned. endpoint
// names whose waiter limit applies; an endpoint unknown to the gateway
// gets DefaultMaxWaiters.
func (w *waits) wait(ctx context.Context, endpoint string, rec store.Record, until time.Time) (store.Record, waitOutcome) {
	d := until.Sub(w.clock.Now())
	if d <= 0 {
		return rec, waitTimedOut
	}
	limit, ok := w.limits[endpoint]
	if !ok {
		limit = config.DefaultMaxWaiters
	}
	id := rec.OperationID
	// The timer exists before the waiter is counted: whoever sees it
	// waiting may move the clock.
	t := w.clock.NewTimer(d)
	defer t.Stop()
	w.mu.Lock()
	if w.count[endpoint] >= limit {
		w.mu.Unlock()
		return rec, waitFull
	}
	w.count[endpoint]++
	wt := w.ops[id]
	if wt == nil {
		pctx, stop := context.WithCancel(context.Background())
		wt = &watch{kick: make(chan struct{}, 1), done: make(chan struct{}), last: rec, stop: stop}
		w.ops[id] = wt
		w.wg.Add(1)
		go w.poll(pctx, rec.Scope.Actor, id, wt)
	}
	wt.refs++
	w.mu.Unlock()
	defer w.leave(endpoint, id, wt)

	outcome := waitTimedOut
	select {
	case <-wt.done:
		outcome = waitFinished
	case <-t.C():
	case <-ctx.Done():
		outcome = waitGone
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return wt.last, outcome
}

// leave drops one waiter of wt; the last one stops its goroutine.
func (w *waits) leave(endpoint string, id uuid.UUID, wt *watch) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.count[endpoint]--
	wt.refs--
	if wt.refs == 0 {
		if w.ops[id] == wt {
			delete(w.ops, id)
		}
		wt.stop()
	}
}

// kick makes the watch of operation id, if any, read the record now: this
// instance has just recorded something for it.
func (w *waits) kick(id uuid.UUID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if wt := w.ops[id]; wt != nil {
		select {
		case wt.kick <- struct{}{}:
		default:
		}
	}
}

// waiting returns how many requests wait now.
func (w *waits) waiting() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, c := range w.count {
		n += c
	}
	return n
}

// poll reads the operation's record until it is no longer running, then
// closes wt.done. A finished watch leaves the map at once, so that a
// waiter arriving later (the operation taken over and running again)
// starts a watch of its own.
func (w *waits) poll(ctx context.Context, actor string, id uuid.UUID, wt *watch) {
	defer w.wg.Done()
	backoff := waitPollFirst
	for {
		t := w.clock.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-wt.kick:
			t.Stop()
		case <-t.C():
		}
		backoff = min(2*backoff, waitPollMax)
		sctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
		rec, err := w.store.Lookup(sctx, actor, id)
		cancel()
		switch {
		case errors.Is(err, store.ErrNotFound):
			// Swept or purged meanwhile: let the waiter's claim decide.
		case err != nil:
			if ctx.Err() == nil {
				w.log.DebugContext(ctx, "waiting: record not read", "operation_id", id, "err", err)
			}
			continue
		case running(rec, w.clock.Now()):
			w.mu.Lock()
			wt.last = rec
			w.mu.Unlock()
			continue
		}
		w.mu.Lock()
		if err == nil {
			wt.last = rec
		}
		if w.ops[id] == wt {
			delete(w.ops, id)
		}
		w.mu.Unlock()
		close(wt.done)
		return
	}
}

// running reports whether rec's operation is being run under a live lease.
func running(rec store.Record, now time.Time) bool {
	return (rec.State == idempotency.InProgress || rec.State == idempotency.Pending) && rec.LeaseExpiresAt.After(now)
}

// close waits for the watches' goroutines (every waiter has left once the
// HTTP server has shut down).
func (w *waits) close() { w.wg.Wait() }
