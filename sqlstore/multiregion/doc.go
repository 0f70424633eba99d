// Package multiregion generates the CockroachDB-only layout of the SQL
// store from the region topology: the statements an operator applies once,
// after the portable migrations, on a cluster whose nodes run with
// --locality=region=<name>. `idemctl deploy cockroach-sql` prints it.
//
// It takes plain inputs (regions in configuration order, each region's
// successor order, the primary region, the shard count) so that sqlstore does
// not depend on region/. The layout keeps a claim region-local:
//
//   - Both idempotency_records and shard_fences are REGIONAL BY ROW AS
//     crdb_region, a STORED computed column of shard that is the home map
//     (shard % len(regions) in configuration order, as region.Topology.Home):
//     a shard's record and fence rows live where the shard's owner is in
//     steady state, and the optimizer derives crdb_region from shard.
//   - The records' primary key starts with shard, so uniqueness stays
//     global while the check is local: crdb_region is computed from a
//     primary key column. A primary key without it (the old layout) costs
//     every insert a uniqueness probe in every region. The key is changed
//     with DROP CONSTRAINT + ADD CONSTRAINT in one statement: ALTER PRIMARY
//     KEY would keep a UNIQUE index on the old key (actor_scope, endpoint,
//     key_hash), and that index would bring the fan-out back.
//   - The fence is not GLOBAL: a FOR SHARE lock on a GLOBAL table goes to
//     its leaseholder in the primary region (a cross-region round trip per
//     claim) and GLOBAL writes commit-wait. Regional, its lock is local.
//   - SURVIVE REGION FAILURE (three or more regions) places 2+2+1 voters;
//     zone config extensions put each region's first successor second in
//     the lease preferences and give it the other two voters, so when a
//     region fails its shards' leases move to the region the failover
//     policy moves ownership to, and no row moves.
//   - FOR SHARE is a real lock only with enable_shared_locking_for_serializable
//     and enable_durable_locking_for_serializable (sqlstore.Open also sets them
//     per session and refuses a server without them).
//
// No CockroachDB server can run in this project's tests: the layout is
// reasoned from CockroachDB's documentation, and its test checks the
// statements' structure, not their execution.
package multiregion
