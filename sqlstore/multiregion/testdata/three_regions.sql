-- CockroachDB-only layout of the idemcoord store, generated from the region topology
-- (idemctl deploy cockroach-sql). Regions in configuration order: us-east, eu-west, ap-south; 1024 shards.
-- Apply once, after the portable migrations (idemctl migrate applies them), on a cluster whose
-- nodes run with --locality=region=<name>. Never on PostgreSQL. Check first:
--   SELECT shards FROM shard_config;  -- must be 1024
-- Regenerate and review before adding or removing a region: the home map below changes.

-- Regions and survival goal.
ALTER DATABASE idemcoord SET PRIMARY REGION "us-east";
ALTER DATABASE idemcoord ADD REGION IF NOT EXISTS "eu-west";
ALTER DATABASE idemcoord ADD REGION IF NOT EXISTS "ap-south";
-- 2+2+1 voters over three regions: a write commits with one ack outside its home region,
-- the physical floor of surviving a region loss.
ALTER DATABASE idemcoord SURVIVE REGION FAILURE;

-- The home map, the same function of shard as region.Topology.Home (shard % 3 in
-- configuration order). Shared queries never name crdb_region; it is derived from shard.
ALTER TABLE shard_fences ADD COLUMN IF NOT EXISTS crdb_region crdb_internal_region NOT NULL
    AS (CASE shard % 3 WHEN 0 THEN 'us-east' WHEN 1 THEN 'eu-west' ELSE 'ap-south' END::crdb_internal_region) STORED;
ALTER TABLE idempotency_records ADD COLUMN IF NOT EXISTS crdb_region crdb_internal_region NOT NULL
    AS (CASE shard % 3 WHEN 0 THEN 'us-east' WHEN 1 THEN 'eu-west' ELSE 'ap-south' END::crdb_internal_region) STORED;

-- The records' primary key starts with shard (crdb_region is computed from it, so the
-- uniqueness check stays in the home region). One statement, so no UNIQUE index is left
-- on the old key: that index would make every claim probe every region.
ALTER TABLE idempotency_records DROP CONSTRAINT idempotency_records_pkey,
    ADD CONSTRAINT idempotency_records_pkey PRIMARY KEY (shard, actor_scope, endpoint, key_hash);
-- operation_id is a time-ordered (v7) UUID from the coordinator; a UNIQUE index on it alone
-- would be checked in every region on every claim. Lookups by id stay indexed (and scoped
-- to the actor); PostgreSQL keeps the unique index. Hash-sharded, so the ids' increasing
-- time prefix spreads over ranges instead of making the index's last range a hot spot.
DROP INDEX IF EXISTS idempotency_records@idempotency_records_operation_id;
CREATE INDEX IF NOT EXISTS idempotency_records_operation_id ON idempotency_records (operation_id) USING HASH;

-- Records and fences live in their shard's home region; the fence's FOR SHARE lock is local.
ALTER TABLE idempotency_records SET LOCALITY REGIONAL BY ROW AS crdb_region;
ALTER TABLE shard_fences SET LOCALITY REGIONAL BY ROW AS crdb_region;
-- Repairs are rare and audited in one place; the shard count is read at start everywhere.
ALTER TABLE repair_audit SET LOCALITY REGIONAL BY TABLE IN PRIMARY REGION;
ALTER TABLE shard_config SET LOCALITY GLOBAL;

-- Each region's first successor is second in its lease preferences and holds the other
-- two voters, matching the failover order: when a region fails, its shards' leases move
-- to the region that takes its shards over, and no row moves.
ALTER DATABASE idemcoord ALTER LOCALITY REGIONAL IN "us-east" CONFIGURE ZONE USING
    lease_preferences = '[[+region=us-east], [+region=eu-west]]',
    voter_constraints = '{+region=us-east: 2, +region=eu-west: 2}';
ALTER DATABASE idemcoord ALTER LOCALITY REGIONAL IN "eu-west" CONFIGURE ZONE USING
    lease_preferences = '[[+region=eu-west], [+region=ap-south]]',
    voter_constraints = '{+region=eu-west: 2, +region=ap-south: 2}';
ALTER DATABASE idemcoord ALTER LOCALITY REGIONAL IN "ap-south" CONFIGURE ZONE USING
    lease_preferences = '[[+region=ap-south], [+region=us-east]]',
    voter_constraints = '{+region=ap-south: 2, +region=us-east: 2}';

-- The fence must be a lock, not a plain read: without these, FOR SHARE under SERIALIZABLE
-- takes no lock and a claim can commit after a transfer bumped the epoch.
ALTER ROLE ALL SET enable_shared_locking_for_serializable = true;
ALTER ROLE ALL SET enable_durable_locking_for_serializable = true;
