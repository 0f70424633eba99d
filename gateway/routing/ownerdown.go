package routing

import (
	"context"
	"time"

	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/gateway/exchange"
)

// Holding a forward the owner's address refused. Between a region's death
// and its liveness key's expiry (1.7-2.5 s at the default 2 s TTL) its
// tracker state is still healthy, so a forward to it fails: the
// connection is refused, or a proxy in front of it closes the connection
// without an answer. Answering that at once sends the client away for a
// whole Retry-After (one second, the least it can say), and its next
// attempt comes up to a second after the region's shards have moved. On
// such evidence of death (failover.NothingServes; a timeout is none) the
// gateway instead holds the call until the owner turns suspect or the
// shard's owner changes, then routes it again (once): the settle hold
// (settle.go) waits for the failover's moves and the call is served by
// the new owner the moment its shard lands. A timeout, or an owner still
// healthy when ownerDownHold ends (a link that resets while the region
// lives), is answered as before (503 region-unreachable, 504
// forward-answer-lost).
//
// A recovering owner (back after a failure, holding the shard again, and
// dead again: a crash loop) is alive as far as the view knows: the hold
// waits for its new key to go too.
//
// Routing again is what the client's retry under the same key would do:
// if the request reached the owner before it died (the answer was lost),
// the new owner finds that run's record and answers from it, waits for
// it, or takes it over once the fence has moved, as for any retry. A
// shadow endpoint honours no key, so there only a forward that was never
// written is routed again.
//
// ownerDownHold bounds the hold: how long a dead region's liveness key
// can outlive it at the default timings (the 2 s TTL past its last
// keepalive, plus etcd's 500 ms expiry check), on the gateway's clock. A
// deployment with a longer liveness_ttl gets the old answer when the hold
// ends first.
const ownerDownHold = 2500 * time.Millisecond

// holdForOwnerDown holds the call whose forward to owner failed (f) until
// the owner turns suspect (or failed) or the shard's owner changes, and
// reports whether it did within ownerDownHold: the call is to be routed
// again. Only on evidence that nothing serves at the owner's address, with
// a region health view, and, for an answer lost, not on a shadow
// endpoint. It waits as the settle hold does (holdUntil).
func (rt *Stage) holdForOwnerDown(ctx context.Context, c *exchange.Request, f *forwardFailure, shard int, owner string) bool {
	if !f.down || rt.health == nil || (f.wrote && c.Shadow != nil) {
		return false
	}
	gone := rt.holdUntil(ctx, ownerDownHold, func() bool {
		o, _, _, ok := rt.owners.Owner(shard)
		s := rt.health.State(owner)
		return !ok || o != owner || s == failover.Suspect || s == failover.Failed
	})
	if gone {
		rt.heldOwnerDown(ctx, c, owner)
	}
	return gone
}

// heldOwnerDown counts and logs a call routed again after its owner went
// down.
func (rt *Stage) heldOwnerDown(ctx context.Context, c *exchange.Request, owner string) {
	rt.count(ctx, owner, "rerouted_owner_down")
	rt.log.InfoContext(ctx, "forward to a dead owner held until its failover began; routing again", "to", owner,
		"endpoint", c.Endpoint.Name, "owner_state", string(rt.health.State(owner)))
}
