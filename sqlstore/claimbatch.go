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
		$9::INT4[], $10::TEXT[], $11::TEXT[], $12::INT8[], $13::INT8[], $14::TEXT[], $15::TIMESTAMPTZ[], $16::INT8[],
		$17::BYTEA[])
		AS b(b_actor, b_endpoint, b_key_hash, b_shard, b_epoch, b_operation_id, b_fingerprint, b_fingerprint_version,
			b_state, b_owner, b_lease_ms, b_ttl_ms, b_region, b_first_sent, b_marker_ms, b_members)
), f AS (
	SELECT shard AS f_shard, epoch AS f_epoch, owner_region AS f_region FROM shard_fences
	WHERE shard = ANY($5::INT4[]) AND (shard, epoch, owner_region) IN (SELECT b_shard, b_epoch, b_region FROM b)
		AND owner_region <> '' FOR SHARE
), t AS (SELECT COALESCE($1::TIMESTAMPTZ, now()) AS at), ins AS (
	INSERT INTO idempotency_records (actor_scope, endpoint, key_hash, operation_id, fingerprint,
		fingerprint_version, state, version, lease_owner, lease_expires_at, attempts, last_stage, shard,
		epoch, created_at, updated_at, expires_at, first_sent, marker_ttl_ms, member_digests)
	SELECT b_actor, b_endpoint, b_key_hash, b_operation_id, b_fingerprint, b_fingerprint_version, b_state, 1, b_owner,
		at + b_lease_ms * INTERVAL '1 millisecond', 1, '', b_shard, b_epoch, at, at,
		at + (b_lease_ms + b_ttl_ms) * INTERVAL '1 millisecond', b_first_sent, b_marker_ms, b_members
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
	req   store.ClaimRequest // by value: in the member's allocation
	owner string
	opID  uuid.UUID
	state idempotency.State

	inserted bool
	found    bool          // not inserted: *rec is the key's record
	rec      *store.Record // the caller's, written by the batch when found
	now      time.Time
	err      error // the batch statement's error, as it came
}

// memberKey is a record's primary key as the combiners compare it (no
// two members with one key share a batch).
type memberKey struct {
	actor, endpoint string
	keyHash         [32]byte
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
	key := memberKey{req.Scope.Actor, req.Scope.Endpoint, req.Scope.Key.Hash()}
	if s.claims.alone(key) {
		// (Before any member is built: a request that finds a slot free
		// allocates nothing for the combiner.)
		defer s.claims.leave(key)
		return s.claimRow(ctx, s.pool, req, owner, opID, state, rec, now)
	}
	return s.claimQueued(ctx, key, req, owner, opID, state, rec, now)
}

// claimQueued is claim's request that found no slot free: it queues for
// a batch (or, if a slot frees first, runs alone after all).
func (s *Store) claimQueued(ctx context.Context, key memberKey, req store.ClaimRequest, owner string, opID uuid.UUID,
	state idempotency.State, rec *store.Record, now *time.Time) (bool, error) {
	m := &member[claimJob]{key: key, req: claimJob{req: req, owner: owner, opID: opID, state: state, rec: rec}}
	j := &m.req
	alone, err := s.claims.join(ctx, m)
	switch {
	case err != nil:
		return false, err
	case alone:
		defer s.claims.leave(m.key)
		return s.claimRow(ctx, s.pool, req, owner, opID, state, rec, now)
	case j.inserted:
		*now = j.now
		*rec = claimedRecord(req, owner, opID, state, j.now)
		rec.Scope.Key = req.Scope.Key
		return true, nil
	case j.found:
		*now = j.now
		rec.Scope.Key = req.Scope.Key
		return true, nil
	case isAmbiguous(stmtOutcome(j.err)):
		markUnreplicated(ctx, j.err)
		return false, j.err
	}
	return s.claimRow(ctx, s.pool, req, owner, opID, state, rec, now)
}

// claimBatchArgs are claimBatchSQL's arguments ($2 on) for batch: one
// array per column, each passed by pointer (pgArray; no boxing).
func claimBatchArgs(batch []*member[claimJob]) []any {
	n := len(batch)
	var a struct {
		actors, endpoints, states, owners, regions pgArray[pgtype.Text]
		keys, fps, members                         pgArray[bytea]
		shards, fpVersions                         pgArray[pgtype.Int4]
		epochs, leases, ttls, markers              pgArray[pgtype.Int8]
		opIDs                                      pgArray[pgtype.UUID]
		firstSent                                  pgArray[pgtype.Timestamptz]
	}
	texts, bytes := make([]pgtype.Text, 5*n), make([]bytea, 3*n)
	int4s, int8s := make([]pgtype.Int4, 2*n), make([]pgtype.Int8, 4*n)
	a.actors, a.endpoints, a.states, a.owners, a.regions = texts[:n:n], texts[n:2*n:2*n], texts[2*n:3*n:3*n],
		texts[3*n:4*n:4*n], texts[4*n:]
	a.keys, a.fps, a.members = bytes[:n:n], bytes[n:2*n:2*n], bytes[2*n:]
	a.shards, a.fpVersions = int4s[:n:n], int4s[n:]
	a.epochs, a.leases, a.ttls, a.markers = int8s[:n:n], int8s[n:2*n:2*n], int8s[2*n:3*n:3*n], int8s[3*n:]
	a.opIDs, a.firstSent = make(pgArray[pgtype.UUID], n), make(pgArray[pgtype.Timestamptz], n)
	for i, m := range batch {
		j := &m.req
		r := &j.req
		a.actors[i], a.endpoints[i], a.keys[i] = pgText(r.Scope.Actor), pgText(r.Scope.Endpoint), m.key.keyHash[:]
		a.shards[i], a.epochs[i], a.regions[i] = pgInt4(int32(r.Token.Shard)), pgInt8(r.Token.Epoch), pgText(r.Token.Region)
		a.opIDs[i] = pgtype.UUID{Bytes: j.opID, Valid: true}
		a.fps[i], a.fpVersions[i] = r.Fingerprint.Sum[:], pgInt4(int32(r.Fingerprint.Version))
		a.states[i], a.owners[i] = pgText(string(j.state)), pgText(j.owner)
		a.leases[i], a.ttls[i] = pgInt8(r.Lease.Milliseconds()), pgInt8(snapshotTTL(*r).Milliseconds())
		a.markers[i] = pgInt8(markerTTL(*r).Milliseconds())
		a.members[i] = membersArg(r.Members) // nil is NULL
		if fs := firstSentArg(r.FirstSent); fs != nil {
			a.firstSent[i] = pgtype.Timestamptz{Time: *fs, Valid: true}
		}
	}
	return []any{&a.actors, &a.endpoints, &a.keys, &a.shards, &a.epochs, &a.opIDs, &a.fps, &a.fpVersions,
		&a.states, &a.owners, &a.leases, &a.ttls, &a.regions, &a.firstSent, &a.markers, &a.members}
}

// claimBatch runs claimBatchSQL for batch and sets each member's answer.
func (s *Store) claimBatch(ctx context.Context, batch []*member[claimJob]) {
	ctx, cancel := context.WithTimeout(ctx, s.loop.Budget.Total)
	defer cancel()
	// The batch's own commit watch: a sync-rep warning on its commit is
	// every member's, not its leader's call's (syncrep.go).
	ctx, w := newWatch(ctx)
	s.metrics.batch(ctx, "claim", len(batch))
	byOp := make(map[uuid.UUID]*claimJob, len(batch))
	for _, m := range batch {
		byOp[m.req.opID] = &m.req
	}
	args := append([]any{s.now()}, claimBatchArgs(batch)...)
	rows, err := s.pool.Query(ctx, claimBatchSQL, args...)
	if err == nil {
		var (
			inserted bool
			op       pgtype.UUID
			now      time.Time
		)
		for rows.Next() {
			// The head from its binary form (rawscan.go), else a scan
			// that skips the record's columns (NULL for an inserted row).
			fds, raw := rawRow(rows)
			flag, okFlag := rawBool(fds, raw, 0)
			id, okID := rawUUID(fds, raw, 1)
			t, null, okTime := rawTime(fds, raw, 2)
			if okFlag && okID && okTime && !null {
				inserted, op, now = flag, pgtype.UUID{Bytes: id, Valid: true}, t
			} else {
				dest := make([]any, 3+recordColCount)
				dest[0], dest[1], dest[2] = &inserted, &op, &now
				if err = rows.Scan(dest...); err != nil {
					break
				}
			}
			j := byOp[op.Bytes]
			if j == nil {
				continue
			}
			if !inserted {
				if err = scanRecord(rows, j.rec, &inserted, &op, &now); err != nil {
					break
				}
			}
			j.inserted, j.found, j.now = inserted, !inserted, now
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
		if err == nil && w.unreplicated.Load() != nil {
			err = s.batchReplicated(ctx, w)
		}
	}
	if err != nil {
		// The batch's fate is no member's answer: each runs alone, or
		// settles an ambiguous commit as its own.
		// A record scanned before the error is nobody's answer either.
		for _, m := range batch {
			m.req.inserted, m.req.found, m.req.err = false, false, err
			*m.req.rec = store.Record{}
		}
	}
}
