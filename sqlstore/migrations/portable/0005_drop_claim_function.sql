-- The claim is one portable statement now (crdb.claimSQL, a data-modifying
-- CTE): idem_claim (0002) used PL/pgSQL that CockroachDB does not run
-- (FOUND, set-returning RETURN QUERY) and admitted writes to unowned
-- shards. Drop it where 0002 created it. Migrate no longer applies 0002
-- (see superseded in migrate.go); the file stays as it was applied.
DROP FUNCTION IF EXISTS idem_claim(TIMESTAMPTZ, TEXT, TEXT, BYTEA, INT4, INT8, UUID, BYTEA, INT4, TEXT, TEXT,
    INT8, INT8, TEXT);
