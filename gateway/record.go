package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// Recording a result that the store did not take. The upstream has
// answered and the client gets that answer; a result left unrecorded
// holds the key IN_PROGRESS and then, on an endpoint without a resolve
// path, OUTCOME_UNKNOWN for ever. So the gateway keeps trying.
const (
	// finishRetryBase is the first wait before recording again: a blip of
	// the store (a dropped connection, a lease move) is usually over
	// within a second.
	finishRetryBase = 250 * time.Millisecond
	// finishRetryMax caps the doubling wait, so a store back after an
	// outage is found within seconds.
	finishRetryMax = 4 * time.Second
	// finishRetryFor bounds the whole effort (and so Close): it covers a
	// CockroachDB range lease move after a region loss (2-7 s) several
	// times over. A result still unrecorded after it is logged as an
	// error for an operator.
	finishRetryFor = 30 * time.Second
)

// errTakerRunning means another worker took the operation over and has
// not recorded anything yet: its outcome may still need this worker's
// answer.
var errTakerRunning = errors.New("gateway: operation taken over and still in progress")

// record stores the result of an execution through the lease. When the
// store fails (not a lost lease), the result is recorded again in the
// background, under the gateway's ownership (Close waits for it), with a
// doubling wait from finishRetryBase to finishRetryMax, for up to
// finishRetryFor; record still returns that first error, so the caller
// answers the client with what it knows.
//
// It returns nil when the result is recorded, by Finish or by settling a
// takeover's OUTCOME_UNKNOWN with it (see finish), an error wrapping
// store.ErrLostOwnership when the record holds another answer, and one
// wrapping fencing.ErrStaleEpoch, with no retry, when the fence refused
// it (the shard moved on).
func (g *Gateway) record(ctx context.Context, c *call, lease *store.Lease, res store.Result) error {
	err := g.finish(ctx, c, lease, res)
	if err == nil || errors.Is(err, store.ErrLostOwnership) {
		return err
	}
	if errors.Is(err, fencing.ErrStaleEpoch) {
		// The shard moved to another region: no retry of this worker's
		// can record it (its token's epoch is over for good); the owner's
		// takeover settles the record.
		g.log.WarnContext(ctx, "result not recorded: the shard moved to another region", "operation_id", lease.OperationID,
			"key", c.key, "err", err)
		return err
	}
	g.log.ErrorContext(ctx, "finish failed; recording again in the background", "operation_id", lease.OperationID,
		"key", c.key, "err", err)
	g.closeMu.Lock()
	closing := g.closing
	if !closing {
		g.bg.Add(1)
	}
	g.closeMu.Unlock()
	if closing {
		// Close is waiting already: the caller's goroutine is the last
		// one this result will get.
		g.recordAgain(ctx, c, lease, res)
		return err
	}
	go func() {
		defer g.bg.Done()
		g.recordAgain(ctx, c, lease, res)
	}()
	return err
}

// recordAgain retries finish until the result is recorded, the record
// holds another answer, or finishRetryFor has passed.
func (g *Gateway) recordAgain(ctx context.Context, c *call, lease *store.Lease, res store.Result) {
	deadline := g.clock.Now().Add(finishRetryFor)
	wait := finishRetryBase
	for {
		if err := clock.Sleep(ctx, g.clock, wait); err != nil {
			return
		}
		err := g.finish(ctx, c, lease, res)
		switch {
		case err == nil:
			g.log.InfoContext(ctx, "result recorded after a retry", "operation_id", lease.OperationID, "state", res.State)
			return
		case errors.Is(err, store.ErrLostOwnership):
			g.log.WarnContext(ctx, "result not recorded: operation taken over", "operation_id", lease.OperationID, "key", c.key)
			return
		case !g.clock.Now().Before(deadline):
			g.log.ErrorContext(ctx, "result never recorded: reconcile the operation", "operation_id", lease.OperationID,
				"key", c.key, "state", res.State, "err", err)
			return
		}
		wait = min(2*wait, finishRetryMax)
	}
}

// finish records res through the lease. When the operation was taken over
// meanwhile (this worker stalled, or its Finish kept failing, past the
// lease), the taker could not know what this worker's send did: on an
// endpoint without a resolve path, or when the upstream could not tell,
// it recorded OUTCOME_UNKNOWN. This worker holds the answer of that send,
// so it settles the unknown outcome with it (sqlstore.Store.Resolve,
// conditioned on the version it read: a concurrent resolver wins or
// loses cleanly).
//
// It returns nil when res is recorded; an error wrapping
// store.ErrLostOwnership when the record holds another answer (or this
// one, recorded by someone else); errTakerRunning while a taker holds the
// operation without a result; any other error is the store's.
func (g *Gateway) finish(ctx context.Context, c *call, lease *store.Lease, res store.Result) error {
	sctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
	defer cancel()
	err := g.traceFinish(sctx, lease, res)
	if !errors.Is(err, store.ErrLostOwnership) || res.State == idempotency.OutcomeUnknown {
		// An unknown outcome is no answer: nothing to settle another
		// record with.
		return err
	}
	rec, lerr := g.cfg.Store.Lookup(sctx, c.actor, lease.OperationID)
	switch {
	case lerr != nil:
		return fmt.Errorf("gateway: reading the record after a takeover: %w", lerr)
	case rec.State == idempotency.InProgress || rec.State == idempotency.Pending:
		return errTakerRunning
	case rec.State != idempotency.OutcomeUnknown:
		return err
	}
	if rerr := g.cfg.Store.Resolve(sctx, rec, lease.Token, res); rerr != nil {
		if errors.Is(rerr, store.ErrLostOwnership) || errors.Is(rerr, store.ErrNotUnknown) {
			return errTakerRunning // moved on meanwhile: look again
		}
		return rerr
	}
	g.log.InfoContext(ctx, "outcome unknown resolved with the answer this worker holds", "operation_id", lease.OperationID,
		"state", res.State)
	return nil
}
