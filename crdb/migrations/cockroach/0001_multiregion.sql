-- CockroachDB-only multi-region layout. Apply after the portable set, once
-- the cluster's nodes run with --locality=region=... . Never run on
-- PostgreSQL. The database name and regions are templated by the operator
-- (idemctl prints this file with them filled in); the defaults below match
-- the local dev cluster's region names.

ALTER DATABASE idemcoord SET PRIMARY REGION "us-east";
ALTER DATABASE idemcoord ADD REGION IF NOT EXISTS "eu-west";
ALTER DATABASE idemcoord ADD REGION IF NOT EXISTS "ap-south";
-- Survive the loss of a whole region: every write replicates to a quorum
-- spread over regions, so a region failover loses no acknowledged claim.
ALTER DATABASE idemcoord SURVIVE REGION FAILURE;

-- Records live in the region of the actor's owner, so a claim commits with
-- a local quorum in steady state. The region column is set from the
-- gateway's region at insert time (DEFAULT gateway_region()).
ALTER TABLE idempotency_records SET LOCALITY REGIONAL BY ROW;

-- The fence is read by every write in every region: GLOBAL tables give
-- consistent, low-latency reads everywhere at the cost of slower writes,
-- which only ownership transfers make.
ALTER TABLE shard_fences SET LOCALITY GLOBAL;
ALTER TABLE repair_audit SET LOCALITY REGIONAL BY ROW;

-- The fence is a lock (FOR SHARE), not a plain read: plain reads in a
-- serializable transaction do not stop a claim from committing after a
-- transfer. CockroachDB needs these for FOR SHARE to take durable locks.
ALTER ROLE ALL SET enable_shared_locking_for_serializable = true;
ALTER ROLE ALL SET enable_durable_locking_for_serializable = true;
