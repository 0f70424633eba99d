-- The records table's two check constraints become one. A first run pays
-- for each check on every insert and update (PostgreSQL reads its
-- expression back from the catalog and plans it again per statement):
-- the two cost 68-124 us of a first run's PostgreSQL CPU, one check over
-- array constants about half that (docs/capacity.md, "Where a first
-- run's PostgreSQL CPU goes"). The rules stay exactly those of
-- idempotency_records_states (0006: the seven states, CANCELLED included)
-- and idempotency_records_lease (0001: a PENDING or IN_PROGRESS record
-- has a lease expiry):
--   a final or parked state, lease or not; or a running state with a lease.
--
-- Migrate runs this file one statement at a time, each in its own
-- transaction (migrate.go, stepwise), and only while the schema still
-- needs it (onlyIf): the new check is added NOT VALID (a short lock, no
-- scan; new rows are checked at once), then validated (a scan that lets
-- reads and writes go on, PostgreSQL's SHARE UPDATE EXCLUSIVE lock, a
-- background job on CockroachDB), and only then are the old two dropped,
-- so the rules hold at every moment. An instance that meets the check
-- already added (a concurrent instance, or a start cut short) goes on
-- with the next statement. All four are portable to CockroachDB.
-- Mixed versions during an upgrade: an instance built before 0009 that
-- starts with Migrate adds idempotency_records_states back (one
-- validating scan; the next start of a newer instance drops it again),
-- and one that starts without Migrate refuses the store
-- (ErrSchemaMissing) until it is upgraded.
ALTER TABLE idempotency_records ADD CONSTRAINT idempotency_records_rules CHECK (
    state = ANY ('{COMPLETED,RETRYABLE_FAILURE,TERMINAL_FAILURE,OUTCOME_UNKNOWN,CANCELLED}'::TEXT[])
    OR (state = ANY ('{PENDING,IN_PROGRESS}'::TEXT[]) AND lease_expires_at IS NOT NULL)) NOT VALID;
ALTER TABLE idempotency_records VALIDATE CONSTRAINT idempotency_records_rules;
ALTER TABLE idempotency_records DROP CONSTRAINT IF EXISTS idempotency_records_states;
ALTER TABLE idempotency_records DROP CONSTRAINT IF EXISTS idempotency_records_lease;
