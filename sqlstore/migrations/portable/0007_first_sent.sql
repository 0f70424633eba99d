-- first_sent is when the client says it first sent the intent
-- (Idempotency-First-Sent), NULL when it did not say. A retry of the key
-- that names another time is another request (a mismatch). Nullable, no
-- default: adding it rewrites nothing on PostgreSQL 11+ or CockroachDB.
-- Run by Migrate only while the column is missing (migrate.go, onlyIf).
ALTER TABLE idempotency_records ADD COLUMN IF NOT EXISTS first_sent TIMESTAMPTZ;
