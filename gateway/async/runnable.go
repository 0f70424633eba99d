package async

import (
	"github.com/idemcoord/idemcoord/failover/policy"
	"github.com/idemcoord/idemcoord/store"
)

// runnable returns the stranded async work this instance may run now, for
// the recovery scan to filter by: its async endpoints, grouped by failover
// policy, each on the shards where routing.Stage.MayRecover lets it run (every shard in
// single-region mode). It reads only the directory cache, once per shard
// and policy, so the scan's answer is decided by the same rule as each
// takeover, not by whatever is oldest in the store.
func (s *Stage) runnable() []store.Runnable {
	byPolicy := map[policy.Policy][]string{}
	var order []policy.Policy
	for _, ep := range s.endpoints {
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
		r := store.Runnable{Endpoints: byPolicy[p], AllShards: !s.routes.MultiRegion()}
		if s.routes.MultiRegion() {
			health := s.routes.LocalHealth()
			for shard := range s.shards {
				if s.routes.MayRecoverShard(shard, p, health) {
					r.Shards = append(r.Shards, shard)
				}
			}
		}
		out = append(out, r)
	}
	return out
}
