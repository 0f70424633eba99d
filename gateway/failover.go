package gateway

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/idemcoord/idemcoord/failover"
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

// failoverRetryAfter is the Retry-After while a shard is refused by the
// reject policy: a failback or an operator's accept takes a while, and a
// client retrying every few seconds costs nothing.
const failoverRetryAfter = 2 * time.Second

// failoverWaitRetryAfter is the Retry-After while the owner region is
// suspect or failed and its shards not moved yet: the failover completes
// within a second or two of that (the confirmation delay, 500 ms by
// default, then the moves), so a client told to come back in a second
// lands right after it, not a second late (Retry-After is whole
// seconds: one is the least it can say).
const failoverWaitRetryAfter = time.Second

// failoverHold applies the endpoint's failover policy to a shard in state,
// owned by owner (DESIGN: "Failover policy per endpoint"): a FAILED_OVER
// shard is refused under reject (nothing executes until failback or an
// operator accepts the new owner) and served under transfer; while the
// owner is only suspect, or failed but not moved yet, both wait. It
// reports whether it answered the request.
func (rt *routing) failoverHold(ctx context.Context, c *call, shard int, owner, state string) bool {
	var health failover.RegionState = failover.Healthy
	if rt.health != nil {
		health = rt.health.State(owner)
	}
	switch c.ep.Failover.Decide(ownership.State(state), health) {
	case failover.Refuse:
		rt.log.InfoContext(ctx, "failed-over shard refused by the endpoint's reject policy",
			"endpoint", c.ep.Name, "shard", shard, "owner", owner)
		rt.refuse(c, "region_failover", problem{Type: "region-failover",
			Title: "the actor's region failed over; this endpoint rejects writes until failback or an operator accepts the new owner",
			Detail: fmt.Sprintf("shard %d is %s (now owned by %q); nothing was executed; retry with the same key later",
				shard, state, owner),
			Status: http.StatusServiceUnavailable}, failoverRetryAfter)
		return true
	case failover.Wait:
		rt.refuse(c, "region_suspect", problem{Type: "region-failover",
			Title:  "the actor's owner region is not answering; waiting for it to come back or fail over",
			Detail: fmt.Sprintf("shard %d: owner %q is %s; nothing was executed; retry with the same key", shard, owner, health),
			Status: http.StatusServiceUnavailable}, failoverWaitRetryAfter)
		return true
	}
	return false
}

// mayRecover reports whether this region may take over an actor's stranded
// async work now: in multi-region mode only when the directory cache says
// this region serves the shard and the endpoint's failover policy lets it
// (a reject endpoint never takes over what a failed region left).
func (g *Gateway) mayRecover(actor string, p failover.Policy) bool {
	if g.routes == nil {
		return true
	}
	return g.routes.mayRecoverShard(shard.Of(actor, g.routes.shards), p, g.routes.localHealth())
}

// mayRecoverShard is mayRecover for a shard, with this region's liveness
// state as the tracker holds it.
func (rt *routing) mayRecoverShard(shard int, p failover.Policy, health failover.RegionState) bool {
	owner, _, state, ok := rt.owners.Owner(shard)
	if !ok || owner != rt.local {
		return false
	}
	return p.Decide(ownership.State(state), health) == failover.Serve
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
	byPolicy := map[failover.Policy][]string{}
	var order []failover.Policy
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
