// Package ownership is the etcd directory of which region owns which shard
// of actors, and the protocol that moves a shard between regions under a
// new fencing epoch.
//
// Layout under a prefix (DefaultPrefix, "/idemcoord/"):
//
//	shard-count        the number of shards, written once by Bootstrap
//	shards/NNNNN       one Entry per shard: {owner, epoch, state} as JSON
//	liveness/R/I       one key per instance I of region R, under a session lease
//
// Ownership keys are never attached to a lease: a region whose instances
// all die still owns its shards until a Move says otherwise. Every change
// of an ownership key is a compare-and-swap on the key's mod revision, and
// every decision that changes ownership starts from a linearizable read.
//
// The authoritative fence is the SQL store's (sqlstore.Store): Directory.Move
// changes etcd and the store in a fixed order (etcd FENCING, SQL epoch
// bump, etcd final state) so that whoever finds a shard FENCING can finish
// the transfer. See docs/multi-region.md.
//
// Cache is a watch-fed local copy of the shard map. It is a hint: it
// answers lookups without any etcd call, and the SQL fence re-checks every
// write.
package ownership
