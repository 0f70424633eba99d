-- incident_events is what the coordinator did to an intent during an
-- incident that the record itself does not keep: a request held or refused
-- while its shard was failing over or moving (the record may not even
-- exist: nothing ran), and the state a record was in when a region that
-- took over its shard first wrote it (a takeover or a resolve across
-- epochs). The incident ledger (idemctl incident report) reads it beside
-- the records; docs/runbook.md, "After an incident: reconcile with the
-- ledger".
--
-- Bounded in volume: one row per key, class and epoch of the shard (the
-- unique index; a client retrying a refused request every second adds
-- nothing), written only while a shard is between owners or failed over,
-- or when a record crosses an epoch. The key is its SHA-256 hash, as in
-- idempotency_records; no body, no header. Cleanup does not touch it: it
-- is the reconciliation record, kept as long as the repair audit.
CREATE TABLE IF NOT EXISTS incident_events (
    id           UUID        NOT NULL PRIMARY KEY,
    at           TIMESTAMPTZ NOT NULL,
    class        TEXT        NOT NULL,
    region       TEXT        NOT NULL,
    shard        INT4        NOT NULL,
    epoch        INT8        NOT NULL,
    actor_scope  TEXT        NOT NULL,
    endpoint     TEXT        NOT NULL,
    key_hash     BYTEA       NOT NULL,
    operation_id UUID,
    state_before TEXT        NOT NULL DEFAULT '',
    detail       TEXT        NOT NULL DEFAULT ''
);

CREATE UNIQUE INDEX IF NOT EXISTS incident_events_once ON incident_events (actor_scope, endpoint, key_hash, class, epoch);
-- The ledger reads a window of events in time order (a keyset on at, id).
CREATE INDEX IF NOT EXISTS incident_events_at ON incident_events (at, id);
