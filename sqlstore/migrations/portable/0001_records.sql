-- Portable schema: runs unchanged on PostgreSQL 15+ and CockroachDB 24+.
-- No SERIAL ids, no UPSERT, no DELETE ... LIMIT, no crdb_region.

-- shard_fences is the authoritative fence. Every claim, takeover and finish
-- locks its shard's row (FOR SHARE) in the same serializable transaction and
-- commits only if the writer's epoch equals the row's epoch. A transfer
-- bumps the epoch with an UPDATE, which conflicts with those locks.
CREATE TABLE IF NOT EXISTS shard_fences (
    shard        INT4        NOT NULL PRIMARY KEY,
    epoch        INT8        NOT NULL CHECK (epoch >= 1),
    owner_region TEXT        NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- One row per (actor scope, endpoint, key). The primary key is the unique
-- key that arbitrates concurrent first requests.
CREATE TABLE IF NOT EXISTS idempotency_records (
    actor_scope         TEXT        NOT NULL,
    endpoint            TEXT        NOT NULL,
    key_hash            BYTEA       NOT NULL,
    operation_id        UUID        NOT NULL,
    fingerprint         BYTEA       NOT NULL,
    fingerprint_version INT4        NOT NULL,
    state               TEXT        NOT NULL,
    version             INT8        NOT NULL,
    lease_owner         TEXT        NOT NULL DEFAULT '',
    lease_expires_at    TIMESTAMPTZ,
    attempts            INT4        NOT NULL DEFAULT 1,
    last_stage          TEXT        NOT NULL DEFAULT '',
    shard               INT4        NOT NULL,
    epoch               INT8        NOT NULL,
    response_status     INT4,
    response_headers    JSONB,
    response_body       BYTEA,
    body_omitted        BOOL        NOT NULL DEFAULT false,
    resource_id         TEXT,
    error_summary       TEXT,
    purged              BOOL        NOT NULL DEFAULT false,
    created_at          TIMESTAMPTZ NOT NULL,
    updated_at          TIMESTAMPTZ NOT NULL,
    expires_at          TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (actor_scope, endpoint, key_hash),
    CONSTRAINT idempotency_records_state_valid CHECK (state IN
        ('PENDING', 'IN_PROGRESS', 'COMPLETED', 'RETRYABLE_FAILURE', 'TERMINAL_FAILURE', 'OUTCOME_UNKNOWN')),
    CONSTRAINT idempotency_records_lease CHECK (lease_expires_at IS NOT NULL OR state NOT IN ('PENDING', 'IN_PROGRESS'))
) WITH (fillfactor = 80);
-- fillfactor leaves room on each page so the updates after a claim
-- (stage, heartbeat, finish), which touch no indexed column, stay HOT
-- updates on PostgreSQL. CockroachDB accepts and ignores it.

CREATE UNIQUE INDEX IF NOT EXISTS idempotency_records_operation_id ON idempotency_records (operation_id);
-- Cleanup scans by expiry; the primary key columns ride along so the
-- batch's delete is by primary key.
CREATE INDEX IF NOT EXISTS idempotency_records_expiry ON idempotency_records (expires_at, actor_scope, endpoint, key_hash);

-- Every manual repair (admin lookup, reconcile, purge, epoch change by hand)
-- leaves a row here.
CREATE TABLE IF NOT EXISTS repair_audit (
    id           UUID        NOT NULL PRIMARY KEY,
    at           TIMESTAMPTZ NOT NULL,
    operator     TEXT        NOT NULL,
    action       TEXT        NOT NULL,
    reason       TEXT        NOT NULL,
    operation_id UUID,
    actor_scope  TEXT,
    detail       TEXT        NOT NULL DEFAULT ''
);

-- Shards start at epoch 1 with no owner region; the regions work assigns them.
-- The seed is written whole or not at all, so a store that has it is left
-- alone: the NOT EXISTS probe reads the fences as of the statement's
-- snapshot and inserts nothing, where ON CONFLICT alone would meet every
-- fence a transfer moved since (a serialization failure at SERIALIZABLE:
-- an instance restarting into a live store failed its start). ON CONFLICT
-- still settles two instances seeding an empty store together.
INSERT INTO shard_fences (shard, epoch, owner_region)
SELECT s, 1, '' FROM generate_series(0, 1023) AS g(s)
WHERE NOT EXISTS (SELECT 1 FROM shard_fences)
ON CONFLICT (shard) DO NOTHING;
