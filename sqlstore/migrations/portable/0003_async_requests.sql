-- async_requests keeps what is needed to run a queued async operation
-- without its client: the request as the gateway received it (method, path,
-- query, body and allow-listed headers, never credentials), opaque to the
-- store. The gateway writes it before it answers 202, so an instance that
-- dies after the 202 leaves enough behind for a live instance to take the
-- operation over once its lease expires, with no new POST.
--
-- A table of its own rather than a column of idempotency_records: the
-- record row stays narrow (its updates stay HOT on PostgreSQL), and
-- idem_claim's row type (RETURNS SETOF idempotency_records) is untouched.
-- Rows are dropped when their operation stops running (the gateway after
-- recording a result, Cleanup for the rest) and by Purge: a request may
-- carry personal data. On CockroachDB this table belongs in the same
-- REGIONAL BY ROW layout as the records it serves.
CREATE TABLE IF NOT EXISTS async_requests (
    operation_id UUID        NOT NULL PRIMARY KEY,
    actor_scope  TEXT        NOT NULL,
    request      BYTEA       NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL
);

-- Purge finds an actor's queued requests by actor scope.
CREATE INDEX IF NOT EXISTS async_requests_actor ON async_requests (actor_scope);
