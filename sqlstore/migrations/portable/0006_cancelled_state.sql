-- CANCELLED joins the states (an async operation the owning actor
-- cancelled before its irreversible stage). 0001's check lists the six
-- states by name; drop it here. Its replacement, idempotency_records_states,
-- lists seven and is added by Migrate (migrate.go, ensureStateCheck) only
-- when it is missing: neither PostgreSQL nor CockroachDB has a portable
-- ADD CONSTRAINT IF NOT EXISTS, and re-adding it on every start would
-- re-validate the whole table each time.
ALTER TABLE idempotency_records DROP CONSTRAINT IF EXISTS idempotency_records_state_valid;
