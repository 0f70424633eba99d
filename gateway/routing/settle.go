package routing

import (
	"context"
	"time"

	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/ownership"
)

// Holding a request whose shard is between owners. A shard is between
// owners while it is FENCING (a move under way) or while its owner is
// suspect or failed and its shards not moved yet (a failover pending):
// the confirmation delay (500 ms) and the moves, about a second, up to
// two on a loaded machine. Answering at once would send the client away
// for a whole Retry-After (one second, the least it can say), so a
// failover that completes 50 ms later still costs that client a second,
// and one that takes 1.2 s costs two. Instead the gateway holds the
// request, waiting on the directory cache's change signal (no I/O), and
// routes it as soon as the shard settles; only a shard still between
// owners after settleHold is refused as before. Nothing has run when the
// hold begins, so holding is always safe.
const (
	// settleHold bounds the hold: as long as a failover's pending phase
	// takes on a loaded machine (measured in region-loss-transfer drills
	// at a load average above 20: 1-2 s), far below any client's or
	// proxy's timeout (the SDK's 30 s, the global entry's 60 s). It runs
	// on the gateway's injected clock (Config.Clock), so a test moves it.
	settleHold = 2 * time.Second
	// settlePoll is how often a held request re-reads the region health
	// view, which has no change signal of its own (a suspect owner may
	// recover without the directory changing). Changes of the directory
	// wake the hold at once, through ownersChanged. On the injected
	// clock, like settleHold.
	settlePoll = 50 * time.Millisecond
)

// ownersChanged is the change signal of an Owners that has one
// (*ownership.Cache): a channel closed at the next change of the
// directory.
type ownersChanged interface {
	Changed() <-chan struct{}
}

var _ ownersChanged = (*ownership.Cache)(nil)

// changed returns the owners' change signal, or nil (a channel that never
// fires) when they have none.
func (rt *Stage) changed() <-chan struct{} {
	if oc, ok := rt.owners.(ownersChanged); ok {
		return oc.Changed()
	}
	return nil
}

// settled returns the shard's owner, epoch and state from the directory
// cache once the shard is not between owners for c's endpoint, or as they
// are when settleHold has passed on the gateway's clock or ctx ended. It
// waits on the cache's change signal, and re-reads the health view every
// settlePoll.
func (rt *Stage) settled(ctx context.Context, c *exchange.Request, shard int) (owner string, epoch int64, state string, ok bool) {
	rt.holdUntil(ctx, settleHold, func() bool {
		owner, epoch, state, ok = rt.owners.Owner(shard)
		return !ok || !rt.between(c, owner, state)
	})
	return owner, epoch, state, ok
}

// holdUntil holds the request until done reports true, and reports
// whether it did: done is asked at once, then at every change of the
// directory cache (its change signal, taken before each ask, so a change
// after it fires) and every settlePoll (for the region health view,
// which has no signal), for at most bound on the gateway's clock, or
// until ctx ends.
func (rt *Stage) holdUntil(ctx context.Context, bound time.Duration, done func() bool) bool {
	changed := rt.changed()
	if done() {
		return true
	}
	deadline := rt.clock.NewTimer(bound)
	defer deadline.Stop()
	tick := rt.clock.NewTicker(settlePoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C():
			return false
		case <-changed:
		case <-tick.C():
		}
		changed = rt.changed()
		if done() {
			return true
		}
	}
}

// between reports whether a shard in state, owned by owner, is between
// owners for c's endpoint: FENCING, or waiting for its owner's failover
// (the endpoint's failover policy decides an action whose answer holds).
func (rt *Stage) between(c *exchange.Request, owner, state string) bool {
	if state == ShardFencing {
		return true
	}
	if state != ShardActive && state != ShardFailedOver {
		return false
	}
	health := failover.Healthy
	if rt.health != nil {
		health = rt.health.State(owner)
	}
	return failover.Decide(c.Endpoint.Failover, ownership.State(state), health).Holds()
}
