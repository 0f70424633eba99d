package sqlstore

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// claimBatchSQL is the claim of several keys in one statement (group
// commit, groupcommit.go): each row of the unnest arrays is inserted only
// when its shard's fence row, locked FOR SHARE, holds its epoch and is
// owned by its region (an unowned shard admits nobody), exactly the
// conditions of claimSQL, with ON CONFLICT DO NOTHING. It returns the
// operation id of every row it inserted and the statement's time. A row
// not inserted (its key exists, its fence refused it) says nothing here:
// its caller runs claimSQL alone, which reads and classifies what is
// there. The fence's conditions filter its locked scan, so a refused row
// locks nothing.
const claimBatchSQL = `WITH b AS (
	SELECT * FROM unnest($2::TEXT[], $3::TEXT[], $4::BYTEA[], $5::INT4[], $6::INT8[], $7::UUID[], $8::BYTEA[],
		$9::INT4[], $10::TEXT[], $11::TEXT[], $12::INT8[], $13::INT8[], $14::TEXT[], $15::TIMESTAMPTZ[], $16::INT8[])
		AS b(actor, endpoint, key_hash, shard, epoch, operation_id, fingerprint, fingerprint_version, state, owner,
			lease_ms, ttl_ms, region, first_sent, marker_ms)
), f AS (
	SELECT shard, epoch, owner_region FROM shard_fences
	WHERE shard = ANY($5::INT4[]) AND (shard, epoch, owner_region) IN (SELECT shard, epoch, region FROM b)
		AND owner_region <> '' FOR SHARE
), t AS (SELECT COALESCE($1::TIMESTAMPTZ, now()) AS t)
INSERT INTO idempotency_records (actor_scope, endpoint, key_hash, operation_id, fingerprint,
	fingerprint_version, state, version, lease_owner, lease_expires_at, attempts, last_stage, shard,
	epoch, created_at, updated_at, expires_at, first_sent, marker_ttl_ms)
SELECT b.actor, b.endpoint, b.key_hash, b.operation_id, b.fingerprint, b.fingerprint_version, b.state, 1, b.owner,
	t.t + b.lease_ms * INTERVAL '1 millisecond', 1, '', b.shard, b.epoch, t.t, t.t,
	t.t + (b.lease_ms + b.ttl_ms) * INTERVAL '1 millisecond', b.first_sent, b.marker_ms
FROM b JOIN f ON f.shard = b.shard AND f.epoch = b.epoch AND f.owner_region = b.region CROSS JOIN t
ON CONFLICT DO NOTHING
RETURNING operation_id, created_at`

// claimJob is one claim in the claim combiner: what claimSQL would
// insert, and the batch's answer for it.
type claimJob struct {
	req   store.ClaimRequest
	owner string
	opID  uuid.UUID
	state idempotency.State

	inserted bool
	now      time.Time
	err      error // the batch statement's error, as it came
}

// batchKey is a record's primary key as the combiners compare it.
func batchKey(actor, endpoint string, keyHash [32]byte) string {
	return actor + "\x00" + endpoint + "\x00" + string(keyHash[:])
}

// claim is claimRow on the pool through the claim combiner: alone when a
// slot is free, else in a batch. A member the batch inserted gets the
// record claimedRecord builds, as from claimSQL; an ambiguous batch
// commit is returned as it came (the claim's re-run recognises its insert
// by lease_owner); any other member runs claimSQL alone for this round.
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
		for rows.Next() {
			var (
				op  pgtype.UUID
				now time.Time
			)
			if err = rows.Scan(&op, &now); err != nil {
				break
			}
			if j := byOp[op.Bytes]; j != nil {
				j.inserted, j.now = true, now
			}
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
			m.req.inserted, m.req.err = false, err
		}
	}
}
