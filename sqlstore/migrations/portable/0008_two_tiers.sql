-- Two-tier retention (an endpoint's replay_ttl): a record keeps its full
-- answer for replay_ttl, then cleanup compacts it to a dedup marker kept
-- until ttl (sqlstore/compact.go).
--   marker_ttl_ms: how long the marker outlives the full record (the
--     endpoint's ttl - replay_ttl at the claim), 0 for a single-tier record.
--     expires_at is when cleanup next acts on the record: compaction while
--     it holds its full answer and marker_ttl_ms > 0, deletion after.
--   compacted: the headers, body and error summary are gone; what is left
--     is the scope, key hash, fingerprint, operation id, state, status and
--     resource id.
-- Constant defaults: adding them rewrites nothing on PostgreSQL 11+; on
-- CockroachDB the backfill is an online schema change. Run by Migrate only
-- while the columns are missing (migrate.go, onlyIf).
ALTER TABLE idempotency_records ADD COLUMN IF NOT EXISTS marker_ttl_ms INT8 NOT NULL DEFAULT 0;
ALTER TABLE idempotency_records ADD COLUMN IF NOT EXISTS compacted BOOL NOT NULL DEFAULT false;
