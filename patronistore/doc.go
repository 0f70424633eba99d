// Package patronistore is the store backend "patroni": one PostgreSQL
// cluster per home region (Patroni-managed: a primary in the region, a
// synchronous standby in another, a third member elsewhere), and a
// store.Backend that routes each shard's calls to its cluster. A shard's
// records, its fence and its queued requests live in one cluster, so a
// claim pays one cross-region round trip (the synchronous replication),
// as CockroachDB's REGIONAL BY ROW would, not one to a far primary per
// statement.
//
// Each cluster is a sqlstore.Store on the cluster's multi-host DSN
// (target_session_attrs=read-write): the SQL store's rules hold per
// cluster (serializable claims, fences locked FOR SHARE in the writing
// transaction, ambiguous commits settled, a commit the synchronous
// standby did not confirm never a success, connections to a demoted
// primary dropped).
//
// The map from shards to clusters is configuration (config.PatroniStore):
// by home region by default, explicit shard ranges where one region's
// shards spread over several clusters. MoveShards moves shards between
// clusters under their fences (docs/store.md, "Splitting a cluster").
//
// What crosses clusters fans out and merges: fence bootstrap and reads,
// the audit, cleanup, stats, operation listings and lookups by operation
// id, actor scopes, and readiness (Ping: ready while any cluster answers,
// so the shards of the other clusters stay served when one is down).
package patronistore
