package async

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/failover/policy"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/store"
)

// In-flight intents of a region that lost their shard.
//
// After a move (a failover, a drain, a failback) the fence refuses every
// write of the old owner: its workers can no longer heartbeat, record a
// stage or record a result. On an endpoint whose upstream deduplicates by
// operation id and that has a resolve path (config.Endpoint.TakesOverFenced)
// the new owner therefore does not wait out their leases:
//
//   - a retry that finds the operation running under an older epoch takes
//     it over at once (store.ClaimRequest.TakeOverFenced, set by
//     coordinate) and resumes through the resolve path, as any takeover
//     of a crashed worker does (execute);
//   - the move sweep below notices, in the directory cache, the shards this
//     region has just received, finds their operations still running under
//     an older epoch (sqlstore.Store.Fenced) and settles them without waiting
//     for a retry: an async one is run as recovery runs it (resolve first);
//     a synchronous one, whose request the store does not keep, is asked
//     of the resolve path and its answer recorded (NotRun: recorded
//     RETRYABLE_FAILURE, so the next retry runs it again at once;
//     undetermined: OUTCOME_UNKNOWN, resolved again by the next retry).
//
// The old owner may still have an upstream call on the wire, or send one
// late (a zombie paused past the move). That call carries the same
// operation id as anything the new owner runs, and the upstream takes
// effect at most once per operation id: that promise, which the endpoint
// declares, is what makes not waiting safe. Elsewhere the lease rules.
// docs/failover.md has the whole argument.

// DefaultMoveSweepInterval is how often an instance looks at its
// directory cache for shards it has just received, besides at each
// change of the cache (which wakes the sweep at once). It reads only the
// in-memory cache (no I/O) unless a shard changed hands, so it can be
// short: a sweep that could not settle a received shard's intents (a
// store error, a policy that does not let them run yet) tries again
// within about this long.
const DefaultMoveSweepInterval = 500 * time.Millisecond

// moveSweepLoop returns the move sweep for Start: at each change of the
// directory cache and every MoveSweepInterval it takes over the fenced
// operations of the shards this region received, unless recovery is
// disabled or the store cannot scan for them; nil then. What the region
// owns when it is called was not just received.
func (s *Stage) moveSweepLoop() func(context.Context) error {
	fs := s.store
	groups := s.fencedEndpoints()
	if s.recovery.Disabled || !s.routes.MultiRegion() || len(groups) == 0 {
		return nil
	}
	every := s.recovery.MoveSweepInterval
	if every <= 0 {
		every = DefaultMoveSweepInterval
	}
	batch := s.recovery.Batch
	if batch <= 0 {
		batch = DefaultRecoveryBatch
	}
	t := clock.Or(s.recovery.Clock).NewTicker(every) // now, in Start (recoveryLoop)
	s.tickers = append(s.tickers, t)
	w := &moveWatch{seen: map[int]int64{}, pending: map[int]map[policy.Policy]bool{}}
	w.observe(s, groups) // what is owned now was not just received
	clear(w.pending)
	return func(ctx context.Context) error {
		defer t.Stop()
		// A change of the directory cache wakes the sweep at once: the
		// intents a move left in flight are taken over as soon as this
		// region sees it owns their shard, not up to an interval later.
		// The ticker still retries what a sweep could not settle (a
		// failed scan, a shard its policy did not let run yet).
		moved := s.routes.Changed()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C():
			case <-moved:
			}
			moved = s.routes.Changed() // before the read: no change missed
			w.observe(s, groups)
			s.sweepMoved(ctx, fs, w, groups, batch)
		}
	}
}

// fencedEndpoints returns the endpoints that take over fenced operations,
// grouped by failover policy (which decides where they may run).
func (s *Stage) fencedEndpoints() map[policy.Policy][]string {
	out := map[policy.Policy][]string{}
	for _, ep := range s.endpoints {
		if ep.TakesOverFenced() {
			p := ep.Failover
			out[p] = append(out[p], ep.Name)
		}
	}
	return out
}

// moveWatch remembers, per shard, the epoch last seen in the directory
// cache, and which shards this region received since and still has to
// sweep, per failover policy. Only the sweep's goroutine uses it.
type moveWatch struct {
	seen    map[int]int64
	pending map[int]map[policy.Policy]bool
}

// observe reads the cache: a shard seen before at a lower epoch and now
// owned here was just received. A shard seen for the first time (the
// cache just loaded) only sets the baseline; one owned elsewhere now is
// no longer this region's to sweep.
func (w *moveWatch) observe(s *Stage, groups map[policy.Policy][]string) {
	for shard := range s.shards {
		owner, epoch, _, ok := s.routes.Owner(shard)
		if !ok {
			continue
		}
		prev, known := w.seen[shard]
		w.seen[shard] = epoch
		if owner != s.routes.Local() {
			delete(w.pending, shard) // moved on before its sweep: the new owner's business
			continue
		}
		if !known || epoch <= prev {
			continue
		}
		todo := map[policy.Policy]bool{}
		for p := range groups {
			todo[p] = true
		}
		w.pending[shard] = todo
	}
}

// sweepMoved settles, for each failover policy, the fenced operations on
// the received shards where that policy lets this region run them now. A
// shard stays pending for a policy until a sweep of it went through to
// the end without an error (a reject endpoint's shard held FAILED_OVER
// waits for an operator's accept).
func (s *Stage) sweepMoved(ctx context.Context, fs store.Queue, w *moveWatch, groups map[policy.Policy][]string, batch int) {
	if len(w.pending) == 0 {
		return
	}
	health := s.routes.LocalHealth()
	for p, names := range groups {
		var shards []int
		for shard, todo := range w.pending {
			if todo[p] && s.routes.MayRecoverShard(shard, p, health) {
				shards = append(shards, shard)
			}
		}
		if len(shards) == 0 {
			continue
		}
		if !s.sweepShards(ctx, fs, store.Runnable{Endpoints: names, Shards: shards}, batch) {
			continue
		}
		for _, shard := range shards {
			delete(w.pending[shard], p)
			if len(w.pending[shard]) == 0 {
				delete(w.pending, shard)
			}
		}
	}
}

// sweepTakeovers bounds the takeovers one sweep runs at once.
const sweepTakeovers = 8

// sweepShards pages through r's fenced operations, settling each page
// before reading the next. It reports whether it reached the end.
func (s *Stage) sweepShards(ctx context.Context, fs store.Queue, r store.Runnable, batch int) bool {
	var after store.Cursor
	for ctx.Err() == nil {
		sctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
		page, err := fs.Fenced(sctx, store.StrandedScan{Runnable: []store.Runnable{r}, After: after, Limit: batch})
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				s.log.WarnContext(ctx, "scan for operations fenced out by a move failed", "err", err)
			}
			return false
		}
		// The takeovers go side by side (each its own store transaction,
		// on different records), at most sweepTakeovers at once: the
		// last of a failover's in-flight intents is not queued behind
		// the others' round trips.
		var wg, taking sync.WaitGroup
		slots := make(chan struct{}, sweepTakeovers)
		for _, q := range page {
			slots <- struct{}{}
			taking.Add(1)
			go func() {
				defer func() { <-slots; taking.Done() }()
				s.settleFenced(ctx, fs, q, &wg)
			}()
		}
		taking.Wait()
		if len(page) < batch {
			// The last page's settles run on (the stage's Close waits for
			// them): the next sweep, which the move's later batches have
			// already woken, does not wait for their resolve paths.
			return true
		}
		wg.Wait() // a page settled before the next is read
		after = page[len(page)-1].Cursor()
	}
	return false
}

// settleFenced takes one fenced operation over (of all the instances
// sweeping, one wins) and settles it in a goroutine counted by wg and by
// the stage's work (Close waits for it). It is called for several
// operations at once.
func (s *Stage) settleFenced(ctx context.Context, fs store.Queue, q store.Queued, wg *sync.WaitGroup) {
	rec := q.Record
	ep := s.endpoint(rec.Scope.Endpoint)
	if ep == nil || !ep.TakesOverFenced() {
		return // another configuration's endpoint
	}
	policy := s.policies[ep.Name]
	var (
		r     *http.Request
		body  []byte
		err   error
		async = ep.Async && q.Request != nil
	)
	if async {
		if r, body, err = decodeQueued(context.Background(), q.Request); err != nil {
			s.log.ErrorContext(ctx, "stored async request unreadable; left for a retry", "operation_id", rec.OperationID, "err", err)
			return
		}
	} else if r, err = http.NewRequestWithContext(context.Background(), ep.Method, "/", nil); err != nil {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
	defer cancel()
	tok, owned, err := s.routes.FenceToken(sctx, rec.Scope.Actor)
	if err == nil && !owned {
		return // moved on
	}
	var claim store.Claim
	if err == nil {
		claim, err = fs.TakeOver(sctx, rec, store.ClaimRequest{Token: tok, Worker: s.worker,
			Lease: policy.Lease, TTL: policy.TTL, ReplayTTL: policy.ReplayTTL, TakeOverFenced: true})
	}
	switch {
	case errors.Is(err, fencing.ErrStaleEpoch):
		s.routes.Invalidate(tok.Shard)
		return
	case errors.Is(err, store.ErrLostOwnership):
		return // another instance (or a retry) won it
	case err != nil:
		s.log.WarnContext(ctx, "takeover of an operation fenced out by a move failed", "operation_id", rec.OperationID, "err", err)
		return
	}
	c := s.newRequest(r, ep, rec.Scope.Actor, body)
	s.log.InfoContext(ctx, "operation left in flight by a region that lost its shard taken over", "operation_id", rec.OperationID,
		"endpoint", ep.Name, "state", rec.State, "from_epoch", rec.Token.Epoch, "epoch", tok.Epoch)
	wg.Add(1)
	if !s.work.Go(func() {
		defer wg.Done()
		if async {
			s.runAsync(context.Background(), c, claim)
			return
		}
		s.runner.SettleTaken(context.Background(), c, claim.Lease)
	}) {
		wg.Done() // closing: the claim's lease lapses, as after a crash, and the next owner takes it over
	}
}
