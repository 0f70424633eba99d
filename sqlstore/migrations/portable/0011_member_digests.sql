-- member_digests are the per-member digests of the request a record was
-- claimed with (fingerprint version 2, idempotency.Members): RFC 6901
-- pointers of a JSON body's members (or a form's part names, or "body")
-- with an 8-byte digest each, never a value, at most
-- idempotency.MaxMembers of them. A 422 names the members a reused key's
-- new request changed. NULL for a record claimed before (fingerprint
-- version 1: a plain 422) and after a purge. Nullable, no default: adding
-- it rewrites nothing on PostgreSQL 11+ or CockroachDB. Run by Migrate
-- only while the column is missing (migrate.go, onlyIf).
ALTER TABLE idempotency_records ADD COLUMN IF NOT EXISTS member_digests BYTEA;
