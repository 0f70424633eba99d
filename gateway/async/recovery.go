package async

import (
	"context"
	"errors"
	"sync"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/store"
)

// recoveryLoop returns the async recovery loop for Start, or nil when
// recovery is disabled or no endpoint is async. The loop returns when its
// context ends, having waited for the runs it started.
func (s *Stage) recoveryLoop() func(context.Context) error {
	rs := s.store
	if s.recovery.Disabled || !s.anyAsync() {
		return nil
	}
	cfg := s.recovery
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultRecoveryInterval
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultRecoveryBatch
	}
	// The ticker starts now, in Start: a clock moved right after Start
	// returns ticks it.
	t := clock.Or(cfg.Clock).NewTicker(cfg.Interval)
	s.tickers = append(s.tickers, t)
	return func(ctx context.Context) error {
		defer t.Stop()
		var after store.Cursor // only this goroutine pages
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C():
				after = s.recoverBatch(ctx, rs, cfg.Batch, after)
			}
		}
	}
}

func (s *Stage) anyAsync() bool {
	for _, ep := range s.endpoints {
		if ep.Async {
			return true
		}
	}
	return false
}

// recoverBatch takes over up to batch stranded operations, one fenced,
// version-conditioned takeover each (so of all the instances scanning,
// one runs each operation), runs them concurrently and waits for them:
// every run records its result before the next scan, or before Close
// returns. A run resumes like a retry's takeover (perform), through the
// resolve rules when the dead attempt may have sent.
//
// The scan asks only for work this instance may run (g.runnable): work
// held elsewhere (another region's shard, a FAILED_OVER shard of a reject
// endpoint, another configuration's endpoint) never fills the batch, so
// it never stands in front of runnable work, however long it is held.
// What the scan still returns and this instance skips (a request it
// cannot decode, a shard that moved since) is paged past: a full batch
// returns the cursor after its last operation, where the next scan
// resumes; a short one reached the end, and the next scan starts over,
// trying again what was skipped.
func (s *Stage) recoverBatch(ctx context.Context, rs store.Queue, batch int, after store.Cursor) store.Cursor {
	sctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
	stranded, err := rs.Stranded(sctx, store.StrandedScan{Runnable: s.runnable(), After: after, Limit: batch})
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			s.log.WarnContext(ctx, "async recovery scan failed", "err", err)
		}
		return store.Cursor{}
	}
	next := store.Cursor{}
	if len(stranded) == batch {
		next = stranded[len(stranded)-1].Cursor()
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, q := range stranded {
		rec := q.Record
		ep := s.endpoint(rec.Scope.Endpoint)
		if ep == nil || !ep.Async {
			continue // another configuration's endpoint: its instances recover it
		}
		policy := s.policies[ep.Name]
		r, body, err := decodeQueued(context.Background(), q.Request)
		if err != nil {
			s.log.ErrorContext(ctx, "stored async request unreadable; left for a retry", "operation_id", rec.OperationID, "err", err)
			continue
		}
		if !s.routes.MayRecover(rec.Scope.Actor, ep.Failover) {
			continue // moving, or held by the endpoint's failover policy
		}
		sctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
		tok, owned, err := s.routes.FenceToken(sctx, rec.Scope.Actor)
		if err == nil && owned {
			var claim store.Claim
			claim, err = rs.TakeOver(sctx, rec, store.ClaimRequest{Token: tok, Worker: s.worker,
				Lease: policy.Lease, TTL: policy.TTL, ReplayTTL: policy.ReplayTTL, DownstreamWindow: ep.DownstreamWindow})
			if err == nil {
				c := s.newRequest(r, ep, rec.Scope.Actor, body)
				s.log.InfoContext(ctx, "async operation recovered from a dead instance", "operation_id", rec.OperationID,
					"endpoint", ep.Name, "state", rec.State)
				wg.Add(1)
				go func() {
					defer wg.Done()
					s.runAsync(context.Background(), c, claim)
				}()
			}
		}
		cancel()
		switch {
		case err == nil, errors.Is(err, store.ErrLostOwnership):
			// Ran, another region's, or another instance won the takeover.
		case errors.Is(err, fencing.ErrStaleEpoch):
			s.routes.Invalidate(tok.Shard)
		case errors.Is(err, store.ErrDownstreamWindowPassed):
			s.log.WarnContext(ctx, "async operation past the downstream window; not run again, left for an operator",
				"operation_id", rec.OperationID, "endpoint", ep.Name)
		default:
			s.log.WarnContext(ctx, "async recovery takeover failed", "operation_id", rec.OperationID, "err", err)
		}
	}
	return next
}
