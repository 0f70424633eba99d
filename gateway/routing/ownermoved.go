package routing

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/gateway/exchange"
)

// Abandoning a forward whose owner lost the shard. A region that is
// paused (SIGSTOP, a long stall) or cut off keeps the connections it
// accepted open, so a forward sent to it before its failover waits for an
// answer that comes only when it resumes: up to the forward's timeout
// (the endpoint's upstream timeout plus slack), long past the failover
// that moved its shards 2-3 s after it stopped. The client, meanwhile,
// waits too; a global entry that gave up on it and sent the request again
// to this region may meet the same forward again.
//
// So while a forward waits for its answer's head, the gateway watches the
// directory cache (its change signal: no I/O, no timer): when the owner
// has failed (suspect or failed in the region health view) and the shard
// has moved (a later epoch) and settled, the forward is abandoned and the
// call routed again, once, as the client's retry under the same key
// would be. Only the first forward of a routing may be abandoned: one
// made on the second routing, or to the owner the store's fence names,
// never is, so a call is cut at most once (a second cut would leave it
// only a 504). A planned move away from a live owner abandons nothing:
// the owner answers. That is safe
// for the same reason the retry is: the shard's move raised the store's
// fence before the directory named the new owner, so the old owner can no
// longer claim the key nor record a result under it; if the request
// reached it, the new owner finds that run's record and answers from it,
// waits for it, or takes it over (the fence moved) and learns its outcome
// from the endpoint's resolve path, as for any retry. A shadow endpoint
// honours no key, so there only a forward whose head was not written yet
// is abandoned.

// errOwnerMoved is the failure of a forward abandoned because the shard's
// owner changed while it waited.
var errOwnerMoved = errors.New("gateway: the shard moved to another region while its forward waited for an answer")

// ownerWatch watches one forward's shard until the forward's answer came
// (answered) or the shard moved and the forward was cut.
type ownerWatch struct {
	// state: 0 watching, 1 answered (the watch ends), 2 cut (the forward
	// was abandoned).
	state atomic.Int32
	done  chan struct{}
}

// watchOwner starts watching shard, forwarded at epoch, while the
// forward runs under ctx: when the directory has the shard at a later
// epoch in a settled state and may() allows it, it calls abandon. The
// caller calls answered once the forward returned. Without a directory
// change signal nothing is watched.
func (rt *Stage) watchOwner(ctx context.Context, abandon func(), shard int, owner string, epoch int64, may func() bool) *ownerWatch {
	w := &ownerWatch{}
	changed := rt.changed()
	if changed == nil || rt.health == nil {
		return w
	}
	w.done = make(chan struct{})
	// Asked at each change only, not at once: the caller just read the
	// directory (a change between that read and the signal taken here is
	// missed until the next one: the forward then waits as it did before).
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-w.done:
				return
			case <-changed:
				changed = rt.changed()
			}
			if rt.ownerMoved(shard, owner, epoch) && may() && w.state.CompareAndSwap(0, 2) {
				abandon()
				return
			}
		}
	}()
	return w
}

// answered ends the watch and reports whether the forward ran to its end
// uncut: false means the watch abandoned it.
func (w *ownerWatch) answered() bool {
	if w.done == nil {
		return true
	}
	ok := w.state.CompareAndSwap(0, 1)
	close(w.done)
	return ok
}

// ownerMoved reports whether owner, to which the shard was forwarded at
// epoch, has failed (suspect or failed in the health view) and the
// directory has the shard at a later epoch, settled there (not FENCING: a
// move still under way is waited out). Every move raises the epoch, so a
// later one is a move since the forward's owner was chosen. A planned
// move away from a live owner (idemctl move, drain) abandons nothing: the
// owner answers, and its answer is what the client gets.
func (rt *Stage) ownerMoved(shard int, owner string, epoch int64) bool {
	if s := rt.health.State(owner); s != failover.Suspect && s != failover.Failed {
		return false
	}
	_, e, state, ok := rt.owners.Owner(shard)
	return ok && e > epoch && (state == ShardActive || state == ShardFailedOver)
}

// reroutedOwnerMoved counts and logs a forward abandoned because its shard
// moved, before the call is routed again.
func (rt *Stage) reroutedOwnerMoved(ctx context.Context, c *exchange.Request, owner string, wrote bool) {
	rt.count(ctx, owner, "rerouted_owner_moved")
	rt.log.InfoContext(ctx, "forward abandoned: the shard moved to another region while its owner had not answered; routing again",
		"to", owner, "endpoint", c.Endpoint.Name, "request_sent", wrote)
}
