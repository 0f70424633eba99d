-- idem_claim reads a key's record and, only if there is none, claims it:
-- one round trip whether the request is a first run or a retry. Runs on
-- PostgreSQL and on CockroachDB v24.1+ (PL/pgSQL with RETURN QUERY).
--
-- The insert locks the shard's fence row FOR SHARE, so a concurrent epoch
-- bump (an ownership transfer) either waits for this claim or makes it fail
-- with a serialization error; it inserts only when the caller's epoch is
-- the shard's and the shard is owned by the caller's region (or by none). It returns the record found, the record inserted, or no row
-- (the fence refused, or a racer's insert is not visible to this snapshot).
-- The caller recognises its own insert by p_owner, which is unique per
-- claim attempt: that is also how an ambiguous commit is resolved.
CREATE OR REPLACE FUNCTION idem_claim(
    p_now TIMESTAMPTZ, p_actor TEXT, p_endpoint TEXT, p_key BYTEA, p_shard INT4, p_epoch INT8,
    p_op UUID, p_fp BYTEA, p_fpv INT4, p_state TEXT, p_owner TEXT, p_lease_ms INT8, p_ttl_ms INT8,
    p_region TEXT)
RETURNS SETOF idempotency_records
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY SELECT * FROM idempotency_records
        WHERE actor_scope = p_actor AND endpoint = p_endpoint AND key_hash = p_key;
    IF FOUND THEN
        RETURN;
    END IF;
    RETURN QUERY INSERT INTO idempotency_records (actor_scope, endpoint, key_hash, operation_id, fingerprint,
            fingerprint_version, state, version, lease_owner, lease_expires_at, attempts, last_stage, shard,
            epoch, created_at, updated_at, expires_at)
        SELECT p_actor, p_endpoint, p_key, p_op, p_fp, p_fpv, p_state, 1, p_owner,
            f.t + p_lease_ms * INTERVAL '1 millisecond', 1, '', p_shard, p_epoch, f.t, f.t,
            f.t + p_ttl_ms * INTERVAL '1 millisecond'
        FROM (SELECT COALESCE(p_now, now()) AS t, epoch, owner_region FROM shard_fences
              WHERE shard = p_shard FOR SHARE) AS f
        WHERE f.epoch = p_epoch AND (f.owner_region = '' OR f.owner_region = p_region)
        ON CONFLICT (actor_scope, endpoint, key_hash) DO NOTHING
        RETURNING *;
END;
$$;
