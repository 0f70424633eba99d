package upstream

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/store"
)

// leaseGuard is a worker's knowledge of its lease on one operation, and
// the one way its writes through the lease are made while it executes:
// the heartbeat and the check before a send share the *store.Lease, whose
// version every write advances, so they take turns.
//
// The lease is known to be this worker's until extendedAt + length: the
// store set the lease's expiry to (its own now) + length in the last
// claim or heartbeat, and that statement ran after extendedAt, the time
// this worker sent it. The worker's clock and the store's may disagree by
// a little; the check leaves half the lease for that and for a pause
// between the check and the send.
type leaseGuard struct {
	store  store.Claims
	clock  clock.Clock
	lease  *store.Lease
	length time.Duration

	mu         sync.Mutex
	extendedAt time.Time // send time of the last claim or heartbeat that succeeded

	// beat is the heartbeat running while the worker executes
	// (Stage.heartbeat), kept here so that starting it costs only its
	// quit channel and its goroutine (two channels and a stop closure of
	// its own were four allocations of every first run).
	beat struct {
		quit chan struct{}
		wg   sync.WaitGroup
	}
}

func newLeaseGuard(st store.Claims, c clock.Clock, lease *store.Lease, length time.Duration, claimedAt time.Time) *leaseGuard {
	return &leaseGuard{store: st, clock: c, lease: lease, length: length, extendedAt: claimedAt}
}

// extend heartbeats the lease: a version-conditioned write that proves the
// worker still owns the operation and moves the lease's expiry to a full
// length from now. It returns store.ErrLostOwnership when the operation
// was taken over.
func (l *leaseGuard) extend(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	sent := l.clock.Now()
	if err := l.store.Heartbeat(ctx, l.lease); err != nil {
		return err
	}
	l.extendedAt = sent
	return nil
}

// ensure proves, before a send, that the worker still owns the operation
// and will for a while: when less than half the lease is known to be
// left it extends the lease first. A claim made just now needs no store
// call, so a first run costs nothing extra.
//
// It returns store.ErrLostOwnership when the operation was taken over (a
// worker stalled past its lease: a retry may have run it meanwhile), or
// the store's error when ownership could not be proven. Either way the
// caller must not send.
//
// This narrows the window, it cannot close it: a pause longer than half
// the lease between ensure and the send still goes out late. Resolve
// paths and the business resource's own unique constraint cover that.
func (l *leaseGuard) ensure(ctx context.Context) error {
	l.mu.Lock()
	left := l.extendedAt.Add(l.length).Sub(l.clock.Now())
	l.mu.Unlock()
	if left > l.length/2 {
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
	defer cancel()
	return l.extend(sctx)
}

// heartbeat extends the lease a third of its length after the previous
// extension ended, until guard.stopHeartbeat is called, so a slow
// upstream or handler is never taken over while it runs. stopHeartbeat
// waits for the heartbeat goroutine, so the lease is the caller's alone
// again when it returns. One heartbeat per guard.
func (s *Stage) heartbeat(ctx context.Context, c *exchange.Request, guard *leaseGuard) {
	every := c.Policy.Lease / 3
	b := &guard.beat
	b.quit = make(chan struct{})
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		t := s.clock.NewTimer(every)
		defer t.Stop()
		for {
			select {
			case <-b.quit:
				return
			case <-t.C():
			}
			sctx, cancel := context.WithTimeout(ctx, every)
			err := guard.extend(sctx)
			cancel()
			if errors.Is(err, store.ErrLostOwnership) {
				s.log.WarnContext(ctx, "lease lost while executing", "operation_id", guard.lease.OperationID, "key", c.Key)
				return
			}
			if err != nil {
				s.log.WarnContext(ctx, "heartbeat failed", "operation_id", guard.lease.OperationID, "err", err)
			}
			t.Reset(every)
		}
	}()
}

// stopHeartbeat ends the heartbeat Stage.heartbeat started on l and
// waits for its goroutine.
func (l *leaseGuard) stopHeartbeat() {
	close(l.beat.quit)
	l.beat.wg.Wait()
}
