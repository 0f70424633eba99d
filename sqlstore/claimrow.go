package sqlstore

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// claimSQL is the claim: one portable statement (a data-modifying CTE),
// one round trip, one serializable transaction, on PostgreSQL and on
// CockroachDB (whose PL/pgSQL lacks FOUND and, before v25.2, set-returning
// RETURN QUERY, so no function is used). Every row starts with the
// decision time and a flag: true when this statement inserted the claim
// (the rest of the row is NULL: the caller knows what it inserted, see
// claimedRecord), false before the record found. No row: the fence
// refused and there is no record, or a racer's insert is not visible to
// this snapshot.
//
//   - claimed inserts only when the shard's fence row, locked FOR SHARE,
//     holds the caller's epoch and is owned by the caller's region. An
//     unowned shard (an empty owner) admits nobody. The conditions filter
//     the locked scan itself, so a refused claim locks nothing; an admitted
//     one holds the lock, which makes a concurrent epoch bump (MoveFence)
//     wait for this claim, or this claim fail with a serialization error.
//   - ON CONFLICT DO NOTHING names no target, so it matches the primary key
//     on both layouts: (actor_scope, endpoint, key_hash) on PostgreSQL,
//     (shard, actor_scope, endpoint, key_hash) on CockroachDB, equivalent
//     because shard is a function of actor_scope. On PostgreSQL
//     SERIALIZABLE a conflict with a row committed after the snapshot
//     raises 40001 instead of returning nothing: exec1 retries, and the
//     retry finds the row.
//   - Only when nothing was inserted (a one-time filter) is the existing
//     record read.
//   - A first run returns no column of the row it inserted: building,
//     sending and decoding 27 values the caller already has cost more than
//     the claim's insert itself (docs/capacity.md, "First run against a
//     single-region peer").
//
// Insert first, not read first: on PostgreSQL a read under SERIALIZABLE
// takes a predicate lock on the primary key's leaf page, and concurrent
// first runs of one actor insert into that same page, so read-first claims
// of a busy actor abort each other with 40001 (measured: 10-14 % of the
// first runs of one actor with 16 clients; none with insert-first). The
// arbiter check of ON CONFLICT takes no predicate lock. The price is paid
// by a retry that arrives while first runs dominate: it takes the fence
// lock too. While retries dominate, Begin reads first (retryrate.go).
//
// expires_at starts at lease + TTL from now, so the finish of a run that
// ends within its lease leaves it unchanged (GREATEST in finishSet) and
// touches no indexed column: PostgreSQL makes it a HOT update, without new
// entries in the three indexes (fillfactor 80 leaves the room).
//
// The caller recognises its own insert by the flag, or, when the answer
// of an earlier attempt was lost, by lease_owner (unique per claim
// attempt) in the record found: that is how an ambiguous commit is
// resolved.
var claimSQL = `WITH claimed AS (
	INSERT INTO idempotency_records (actor_scope, endpoint, key_hash, operation_id, fingerprint,
		fingerprint_version, state, version, lease_owner, lease_expires_at, attempts, last_stage, shard,
		epoch, created_at, updated_at, expires_at, first_sent, marker_ttl_ms, member_digests)
	SELECT $2, $3, $4, $7, $8, $9, $10, 1, $11, f.t + $12::INT8 * INTERVAL '1 millisecond', 1, '', $5, $6,
		f.t, f.t, f.t + ($12::INT8 + $13::INT8) * INTERVAL '1 millisecond', $15::TIMESTAMPTZ, $16::INT8, $17::BYTEA
	FROM (SELECT COALESCE($1::TIMESTAMPTZ, now()) AS t FROM shard_fences
		WHERE shard = $5 AND epoch = $6 AND owner_region = $14 AND owner_region <> '' FOR SHARE) AS f
	ON CONFLICT DO NOTHING
	RETURNING 1
)
SELECT COALESCE($1::TIMESTAMPTZ, now()), true` + strings.Repeat(", NULL", recordColCount) + ` FROM claimed
UNION ALL
SELECT COALESCE($1::TIMESTAMPTZ, now()), false, ` + recordCols + ` FROM idempotency_records
WHERE shard = $5 AND actor_scope = $2 AND endpoint = $3 AND key_hash = $4 AND NOT EXISTS (SELECT 1 FROM claimed)`

// recordColCount is the number of columns in recordCols.
var recordColCount = strings.Count(recordCols, ",") + 1

// claimRow runs the claim on q (the pool, or the caller's transaction). It
// reports found when rec holds a record: the claim this call inserted
// (built by claimedRecord) or the one found.
func (s *Store) claimRow(ctx context.Context, q querier, req store.ClaimRequest, owner string, opID uuid.UUID,
	state idempotency.State, rec *store.Record, now *time.Time) (bool, error) {
	rows, err := q.Query(ctx, claimSQL, newClaimArgs(s.now(), &req, owner, opID, state).list[:]...)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	if !rows.Next() {
		rows.Close()
		return false, rows.Err()
	}
	// The time and the flag first. A first run's row is read from its
	// binary form (rawscan.go); a record found is scanned whole.
	var inserted bool
	fds, raw := rawRow(rows)
	flag, okFlag := rawBool(fds, raw, 1)
	t, null, okTime := rawTime(fds, raw, 0)
	switch {
	case okFlag && flag && okTime && !null:
		inserted, *now = true, t
	case okFlag && !flag:
		err = scanRecord(rows, rec, now, &inserted)
	default:
		// A nil destination skips a column (a first run's are NULL).
		dest := make([]any, 2+recordColCount)
		dest[0], dest[1] = now, &inserted
		if err = rows.Scan(dest...); err == nil && !inserted {
			err = scanRecord(rows, rec, now, nil)
		}
	}
	rows.Close()
	if err == nil {
		err = rows.Err()
	}
	if err != nil {
		return false, err
	}
	if inserted {
		*rec = claimedRecord(req, owner, opID, state, *now)
	}
	rec.Scope.Key = req.Scope.Key
	return true, nil
}

// claimedRecord is the record claimSQL inserts for req at now: the
// columns it wrote, with the times computed as the statement does.
func claimedRecord(req store.ClaimRequest, owner string, opID uuid.UUID, state idempotency.State, now time.Time) store.Record {
	lease := time.Duration(req.Lease.Milliseconds()) * time.Millisecond
	ttl := time.Duration(snapshotTTL(req).Milliseconds()) * time.Millisecond
	marker := time.Duration(markerTTL(req).Milliseconds()) * time.Millisecond
	rec := store.Record{
		Scope:          req.Scope,
		KeyHash:        req.Scope.Key.Hash(),
		OperationID:    opID,
		Fingerprint:    req.Fingerprint,
		State:          state,
		Version:        1,
		LeaseOwner:     owner,
		LeaseExpiresAt: now.Add(lease),
		Attempts:       1,
		Token:          fencing.Token{Shard: req.Token.Shard, Epoch: req.Token.Epoch},
		CreatedAt:      now,
		UpdatedAt:      now,
		ExpiresAt:      keyExpiresAt(now.Add(lease+ttl), marker, false),
		MarkerTTL:      marker,
		Members:        req.Members,
	}
	if fs := firstSentArg(req.FirstSent); fs != nil {
		rec.FirstSent = fs.Truncate(time.Microsecond).In(now.Location())
	}
	return rec
}
