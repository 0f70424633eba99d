// Package shard maps an actor scope to its shard, the unit of region
// ownership. It is a leaf: the fence (package fencing), the ownership
// directory, the SQL store and the gateway all shard by it, so the
// mapping is defined once and can never differ between them.
package shard

import (
	"errors"
	"hash/fnv"
)

// ErrNotBootstrapped is returned when a deployment's shards are not set up
// yet: the SQL store has no shard fences (sqlstore) or the etcd directory
// no shard count or entry (ownership). Both wrap this one error, saying
// which side is missing; the daemon's bootstrap sets up both.
var ErrNotBootstrapped = errors.New("shard: shards not bootstrapped")

// DefaultCount is the number of shards actors hash to. 1024 keeps one etcd
// key per shard well within etcd's limits while spreading a hot region's
// load; it is fixed for the life of a deployment.
const DefaultCount = 1024

// Of maps an actor scope to its shard in [0, shards). The mapping must
// never change for a deployment, so it uses FNV-1a, which is stable across
// Go releases.
func Of(actorScope string, shards int) int {
	h := fnv.New32a()
	h.Write([]byte(actorScope))
	return int(h.Sum32() % uint32(shards))
}
