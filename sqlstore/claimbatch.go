package sqlstore

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// claimBatchSQL is the claim of several keys in one statement (group
// commit, groupcommit.go): claimSQL per row of the unnest arrays. A row is
// inserted only when its shard's fence row, locked FOR SHARE, holds its
// epoch and is owned by its region (an unowned shard admits nobody),
// exactly the conditions of claimSQL, with ON CONFLICT DO NOTHING; the
// fence's conditions filter its locked scan, so a refused row locks
// nothing. Every answer row starts with the flag (true: inserted), the
// member's operation id and the statement's time. As in claimSQL, a row
// not inserted reads its key's existing record in the same statement (the
// rest of the answer row; NULLs for an inserted one), and only such a row
// reads, one primary-key lookup each: the members are filtered by the
// insert's answer first (OFFSET 0 keeps PostgreSQL from pulling that
// filter below the read), so a batch of first runs takes no predicate
// lock on the primary key's pages (see claimSQL on why that matters), and
// the read is a lateral point lookup (LIMIT 1 keeps it one: the key is
// unique), never a scan of the table joined to the members (a scan would
// take a predicate lock on the whole table). A member with neither (its fence refused
// it, or a racer's insert is not visible to this snapshot) runs claimSQL
// alone.
var claimBatchSQL = `WITH b AS (
	SELECT * FROM unnest($2::TEXT[], $3::TEXT[], $4::BYTEA[], $5::INT4[], $6::INT8[], $7::UUID[], $8::BYTEA[],
		$9::INT4[], $10::TEXT[], $11::TEXT[], $12::INT8[], $13::INT8[], $14::TEXT[], $15::TIMESTAMPTZ[], $16::INT8[])
		AS b(b_actor, b_endpoint, b_key_hash, b_shard, b_epoch, b_operation_id, b_fingerprint, b_fingerprint_version,
			b_state, b_owner, b_lease_ms, b_ttl_ms, b_region, b_first_sent, b_marker_ms)
), f AS (
	SELECT shard AS f_shard, epoch AS f_epoch, owner_region AS f_region FROM shard_fences
	WHERE shard = ANY($5::INT4[]) AND (shard, epoch, owner_region) IN (SELECT b_shard, b_epoch, b_region FROM b)
		AND owner_region <> '' FOR SHARE
), t AS (SELECT COALESCE($1::TIMESTAMPTZ, now()) AS at), ins AS (
	INSERT INTO idempotency_records (actor_scope, endpoint, key_hash, operation_id, fingerprint,
		fingerprint_version, state, version, lease_owner, lease_expires_at, attempts, last_stage, shard,
		epoch, created_at, updated_at, expires_at, first_sent, marker_ttl_ms)
	SELECT b_actor, b_endpoint, b_key_hash, b_operation_id, b_fingerprint, b_fingerprint_version, b_state, 1, b_owner,
		at + b_lease_ms * INTERVAL '1 millisecond', 1, '', b_shard, b_epoch, at, at,
		at + (b_lease_ms + b_ttl_ms) * INTERVAL '1 millisecond', b_first_sent, b_marker_ms
	FROM b JOIN f ON f_shard = b_shard AND f_epoch = b_epoch AND f_region = b_region CROSS JOIN t
	ON CONFLICT DO NOTHING
	RETURNING operation_id AS i_operation_id
)
SELECT true, i_operation_id, (SELECT at FROM t)` + strings.Repeat(", NULL", recordColCount) + ` FROM ins
UNION ALL
SELECT false, b_operation_id, (SELECT at FROM t), ` + recordCols + `
FROM (SELECT * FROM b WHERE NOT EXISTS (SELECT 1 FROM ins WHERE i_operation_id = b_operation_id) OFFSET 0) AS m,
	LATERAL (SELECT ` + recordCols + ` FROM idempotency_records
		WHERE shard = m.b_shard AND actor_scope = m.b_actor AND endpoint = m.b_endpoint AND key_hash = m.b_key_hash LIMIT 1) AS r`

// claimJob is one claim in the claim combiner: what claimSQL would
// insert, and the batch's answer for it.
type claimJob struct {
	req   store.ClaimRequest
	owner string
	opID  uuid.UUID
	state idempotency.State

	inserted bool
	found    bool         // not inserted: rec is the key's record
	rec      store.Record // found
	now      time.Time
	err      error // the batch statement's error, as it came
}

// batchKey is a record's primary key as the combiners compare it.
func batchKey(actor, endpoint string, keyHash [32]byte) string {
	return actor + "\x00" + endpoint + "\x00" + string(keyHash[:])
}

// claim is claimRow on the pool through the claim combiner: alone when a
// slot is free, else in a batch. A member the batch inserted gets the
// record claimedRecord builds, and a member whose key has a record gets
// that record, both as from claimSQL; an ambiguous batch commit is
// returned as it came (the claim's re-run recognises its insert by
// lease_owner); any other member runs claimSQL alone for this round.
func (s *Store) claim(ctx context.Context, req store.ClaimRequest, owner string, opID uuid.UUID,
	state idempotency.State, rec *store.Record, now *time.Time) (bool, error) {
	if s.claims == nil {
		return s.claimRow(ctx, s.pool, req, owner, opID, state, rec, now)
	}
	j := &claimJob{req: req, owner: owner, opID: opID, state: state}
	m := &member[*claimJob]{key: batchKey(req.Scope.Actor, req.Scope.Endpoint, req.Scope.Key.Hash()), req: j}
	alone, err := s.claims.join(ctx, m)
	switch {
	case err != nil:
		return false, err
	case alone:
		defer s.claims.leave()
		return s.claimRow(ctx, s.pool, req, owner, opID, state, rec, now)
	case j.inserted:
		*now = j.now
		*rec = claimedRecord(req, owner, opID, state, j.now)
		rec.Scope.Key = req.Scope.Key
		return true, nil
	case j.found:
		*now, *rec = j.now, j.rec
		rec.Scope.Key = req.Scope.Key
		return true, nil
	case j.err != nil && ambiguous(stmtOutcome(j.err)):
		return false, j.err
	}
	return s.claimRow(ctx, s.pool, req, owner, opID, state, rec, now)
}

// claimBatch runs claimBatchSQL for batch and sets each member's answer.
func (s *Store) claimBatch(ctx context.Context, batch []*member[*claimJob]) {
	ctx, cancel := context.WithTimeout(ctx, s.loop.Budget.Total)
	defer cancel()
	s.metrics.batch(ctx, "claim", len(batch))
	n := len(batch)
	var (
		actors, endpoints, states, owners, regions = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		keys, fps                                  = make([][]byte, n), make([][]byte, n)
		shards, fpVersions                         = make([]int32, n), make([]int32, n)
		epochs, leases, ttls, markers              = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		opIDs                                      = make([]pgtype.UUID, n)
		firstSent                                  = make([]pgtype.Timestamptz, n)
		byOp                                       = make(map[uuid.UUID]*claimJob, n)
	)
	for i, m := range batch {
		j := m.req
		r := j.req
		kh := r.Scope.Key.Hash()
		actors[i], endpoints[i], keys[i] = r.Scope.Actor, r.Scope.Endpoint, kh[:]
		shards[i], epochs[i], regions[i] = int32(r.Token.Shard), r.Token.Epoch, r.Token.Region
		opIDs[i] = pgtype.UUID{Bytes: j.opID, Valid: true}
		fps[i], fpVersions[i] = r.Fingerprint.Sum[:], int32(r.Fingerprint.Version)
		states[i], owners[i] = string(j.state), j.owner
		leases[i], ttls[i], markers[i] = r.Lease.Milliseconds(), snapshotTTL(r).Milliseconds(), markerTTL(r).Milliseconds()
		if fs := firstSentArg(r.FirstSent); fs != nil {
			firstSent[i] = pgtype.Timestamptz{Time: *fs, Valid: true}
		}
		byOp[j.opID] = j
	}
	rows, err := s.pool.Query(ctx, claimBatchSQL, s.now(), actors, endpoints, keys, shards, epochs, opIDs, fps,
		fpVersions, states, owners, leases, ttls, regions, firstSent, markers)
	if err == nil {
		dest := make([]any, 3+recordColCount)
		for rows.Next() {
			var (
				inserted bool
				op       pgtype.UUID
				now      time.Time
			)
			dest[0], dest[1], dest[2] = &inserted, &op, &now
			if err = rows.Scan(dest...); err != nil {
				break
			}
			j := byOp[op.Bytes]
			if j == nil {
				continue
			}
			if !inserted {
				if err = scanRecord(rows, &j.rec, &inserted, &op, &now); err != nil {
					break
				}
			}
			j.inserted, j.found, j.now = inserted, !inserted, now
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
	}
	if err != nil {
		// The batch's fate is no member's answer: each runs alone, or
		// settles an ambiguous commit as its own.
		for _, m := range batch {
			m.req.inserted, m.req.found, m.req.err = false, false, err
		}
	}
}
