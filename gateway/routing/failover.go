package routing

import (
	"context"
	"net/http"

	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/failover/policy"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/ledger"
	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/shard"
)

// failoverHold applies the endpoint's failover policy to a shard in state,
// owned by owner (docs/failover.md, "Policies"): a FAILED_OVER
// shard is refused under reject (nothing executes until failback or an
// operator accepts the new owner) and served under transfer; while the
// owner is only suspect, or failed but not moved yet, both wait. It
// reports whether it answered the request.
func (rt *Stage) failoverHold(ctx context.Context, c *exchange.Request, shard int, epoch int64, owner, state string) bool {
	var health failover.RegionState = failover.Healthy
	if rt.health != nil {
		health = rt.health.State(owner)
	}
	a := failover.Decide(c.Endpoint.Failover, ownership.State(state), health)
	ans, ok := a.Answer()
	if !ok {
		return false
	}
	ledger.NoteRouting(rt.ledger, rt.local, c.Actor, c.Endpoint.Name, c.Key, shard, epoch, ans.Hold, ans.Problem)
	if !ans.Hold {
		rt.log.InfoContext(ctx, "shard refused by the endpoint's failover policy",
			"endpoint", c.Endpoint.Name, "policy", c.Endpoint.Failover, "action", a, "shard", shard, "owner", owner)
	}
	c.RefuseWait(ans.Result, exchange.Problem{Type: ans.Problem, Title: ans.Title,
		Detail: ans.DetailFor(shard, state, owner, string(health)),
		Status: http.StatusServiceUnavailable}, ans.RetryAfter)
	return true
}

// MayRecover reports whether this region may take over an actor's
// stranded async work now: in multi-region mode only when the directory
// cache says this region serves the shard and the endpoint's failover
// policy lets it (a reject endpoint never takes over what a failed region
// left); always in single-region mode.
func (rt *Stage) MayRecover(actor string, p policy.Policy) bool {
	if rt.owners == nil {
		return true
	}
	return rt.MayRecoverShard(shard.Of(actor, rt.shards), p, rt.LocalHealth())
}

// MayRecoverShard is MayRecover for a shard (multi-region mode), with this
// region's liveness state as the tracker holds it.
func (rt *Stage) MayRecoverShard(shard int, p policy.Policy, health failover.RegionState) bool {
	owner, _, state, ok := rt.owners.Owner(shard)
	if !ok || owner != rt.local {
		return false
	}
	return failover.Decide(p, ownership.State(state), health) == policy.Serve
}

// LocalHealth returns this region's liveness state (Healthy without a
// tracker).
func (rt *Stage) LocalHealth() failover.RegionState {
	if rt.health == nil {
		return failover.Healthy
	}
	return rt.health.State(rt.local)
}
