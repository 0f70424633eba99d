package devcluster

import (
	"fmt"

	"github.com/idemcoord/idemcoord/devcluster/devstate"
	"github.com/idemcoord/idemcoord/shard"
)

// Tenant is the tenant of every dev cluster token (devstate.Tenant).
const Tenant = devstate.Tenant

// Shards is the dev cluster's shard count (the configuration default).
const Shards = shard.DefaultCount

// ShardOf returns the shard of a dev cluster actor (its subject).
func ShardOf(actor string) int { return shard.Of(Tenant+"/"+actor, Shards) }

// Home returns the home region of a dev cluster actor: the region that
// owns it in steady state, before any move or failover.
func (c *Cluster) Home(actor string) string {
	return c.Topology[ShardOf(actor)%len(c.Topology)].Name
}

// ActorHomedIn returns an actor name starting with prefix whose home is
// region, for tests and drills that need a request to be served by the
// region it lands in.
func (c *Cluster) ActorHomedIn(region, prefix string) string {
	for i := 0; ; i++ {
		if name := fmt.Sprintf("%s-%d", prefix, i); c.Home(name) == region {
			return name
		}
	}
}

// Owner reports who owns an actor's shard, as the first running region's
// ownership cache sees it (a hint; the store's fence decides).
func (c *Cluster) Owner(actor string) ActorOwner {
	o := ActorOwner{Actor: Tenant + "/" + actor, Shard: ShardOf(actor)}
	if d := c.running(); d != nil && d.Owners() != nil {
		o.Owner, o.Epoch, o.State, _ = d.Owners().Owner(o.Shard)
	}
	return o
}
