package gateway

import (
	"context"
	"net/http"

	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/failover/policy"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/ledger"
	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/store"
)

// RegionHealth tells how a region's liveness looks, from a local view
// kept up to date elsewhere (no I/O): *failover.Tracker.
type RegionHealth interface {
	State(region string) failover.RegionState
}

var _ RegionHealth = (*failover.Tracker)(nil)

// failoverHold applies the endpoint's failover policy to a shard in state,
// owned by owner (docs/failover.md, "Policies"): a FAILED_OVER
// shard is refused under reject (nothing executes until failback or an
// operator accepts the new owner) and served under transfer; while the
// owner is only suspect, or failed but not moved yet, both wait. It
// reports whether it answered the request.
func (rt *routing) failoverHold(ctx context.Context, c *call, shard int, epoch int64, owner, state string) bool {
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

// mayRecover reports whether this region may take over an actor's stranded
// async work now: in multi-region mode only when the directory cache says
// this region serves the shard and the endpoint's failover policy lets it
// (a reject endpoint never takes over what a failed region left).
func (g *Gateway) mayRecover(actor string, p policy.Policy) bool {
	if g.routes == nil {
		return true
	}
	return g.routes.mayRecoverShard(shard.Of(actor, g.routes.shards), p, g.routes.localHealth())
}

// mayRecoverShard is mayRecover for a shard, with this region's liveness
// state as the tracker holds it.
func (rt *routing) mayRecoverShard(shard int, p policy.Policy, health failover.RegionState) bool {
	owner, _, state, ok := rt.owners.Owner(shard)
	if !ok || owner != rt.local {
		return false
	}
	return failover.Decide(p, ownership.State(state), health) == policy.Serve
}

// localHealth returns this region's liveness state (Healthy without a
// tracker).
func (rt *routing) localHealth() failover.RegionState {
	if rt.health == nil {
		return failover.Healthy
	}
	return rt.health.State(rt.local)
}

// runnable returns the stranded async work this instance may run now, for
// the recovery scan to filter by: its async endpoints, grouped by failover
// policy, each on the shards where mayRecover lets it run (every shard in
// single-region mode). It reads only the directory cache, once per shard
// and policy, so the scan's answer is decided by the same rule as each
// takeover, not by whatever is oldest in the store.
func (g *Gateway) runnable() []store.Runnable {
	byPolicy := map[policy.Policy][]string{}
	var order []policy.Policy
	for _, ep := range g.cfg.Endpoints {
		if !ep.Async {
			continue
		}
		p := ep.Failover
		if _, ok := byPolicy[p]; !ok {
			order = append(order, p)
		}
		byPolicy[p] = append(byPolicy[p], ep.Name)
	}
	out := make([]store.Runnable, 0, len(order))
	for _, p := range order {
		r := store.Runnable{Endpoints: byPolicy[p], AllShards: g.routes == nil}
		if g.routes != nil {
			health := g.routes.localHealth()
			for shard := range g.cfg.Shards {
				if g.routes.mayRecoverShard(shard, p, health) {
					r.Shards = append(r.Shards, shard)
				}
			}
		}
		out = append(out, r)
	}
	return out
}
