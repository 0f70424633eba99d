package routing

import (
	"context"

	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/shard"
)

// HandOff passes a run whose result the fence refused to the shard's new
// owner, and reports whether the call was answered.
//
// The run happened here, but meanwhile the actor's shard moved (this
// region was cut from etcd, or paused, past its liveness lease), so this
// worker can never record its result. Answering 503 and Retry-After, as
// before, costs the client at least a second (the least Retry-After can
// say) before its retry, with the same key, reaches the new owner. The
// gateway makes that retry at once instead: it reads the store's fence
// (the authority: this region's view of the directory may be cut off) and
// forwards the call, once, to the region it names. There the claim finds
// the operation in flight under this region's fenced lease and takes it
// over at once, and the resolve path says whether it ran: the new owner
// records that outcome and answers it, the answer every later retry gets.
//
// Only for an endpoint that takes over fenced operations at once
// (config.Endpoint.TakesOverFenced: upstream_dedup operation_id and a
// resolve path; elsewhere the new owner would wait out this lease) and
// keys its requests (not a shadow endpoint), in forward mode, for a call
// not forwarded here (one hop at most), when the fence names another
// region of the topology. Anything else, and a forward that fails, is
// false: the caller answers as before.
func (rt *Stage) HandOff(ctx context.Context, c *exchange.Request) bool {
	if rt.owners == nil || rt.redirect || c.Shadow != nil || !c.Endpoint.TakesOverFenced() ||
		ForwardedFrom(c.R.Context()) != "" {
		return false
	}
	sh := shard.Of(c.Actor, rt.shards)
	sctx, cancel := context.WithTimeout(ctx, exchange.StoreCallTimeout)
	epoch, owner, err := rt.store.Fence(sctx, sh)
	cancel()
	if err != nil || owner == "" || owner == rt.local {
		return false
	}
	target, err := rt.target(c, owner)
	if err != nil {
		return false
	}
	if f := rt.forward(ctx, c, sh, owner, epoch, target, false); f != nil {
		rt.log.WarnContext(ctx, "hand-off of a run the fence refused failed; the client retries", "to", owner,
			"endpoint", c.Endpoint.Name, "err", exchange.Redact(f.err))
		return false
	}
	return true
}
