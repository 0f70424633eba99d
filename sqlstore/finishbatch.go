package sqlstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/idemcoord/idemcoord/store"
)

// finishBatchSQL is the finish of several leases in one statement (group
// commit, groupcommit.go): updateSQL with finishSet and ownCond per row of
// the unnest arrays. Each row's record is updated only if its shard's
// fence row, locked FOR SHARE, holds the row's epoch and is owned by its
// region (an unowned shard admits nobody), its version and lease owner
// are the row's, and it is still running; it then stores that row's own
// result exactly as finishSet does (a purged record stays purged; the
// record lives at least the row's TTL from now). It returns, per updated
// row, the row's position in the arrays (from 1, WITH ORDINALITY) and
// what fencedUpdate.run reads. A row not updated says nothing here: its
// caller runs finishSQL alone.
const finishBatchSQL = `WITH b AS (
	SELECT * FROM unnest($2::INT4[], $3::INT8[], $4::TEXT[], $5::TEXT[], $6::BYTEA[], $7::INT8[], $8::TEXT[],
		$9::TEXT[], $10::TEXT[], $11::INT4[], $12::TEXT[], $13::BYTEA[], $14::BOOL[], $15::TEXT[], $16::TEXT[],
		$17::INT8[]) WITH ORDINALITY
		AS b(shard, epoch, actor, endpoint, key_hash, version, owner, region, state, status, headers, body,
			body_omitted, resource_id, error_summary, ttl_ms, i)
), f AS (
	SELECT shard, epoch, owner_region FROM shard_fences
	WHERE shard = ANY($2::INT4[]) AND (shard, epoch, owner_region) IN (SELECT shard, epoch, region FROM b)
		AND owner_region <> '' FOR SHARE
)
UPDATE idempotency_records AS r SET version = r.version + 1, updated_at = COALESCE($1::TIMESTAMPTZ, now()),
	epoch = b.epoch, state = b.state, lease_expires_at = NULL,
	response_status = b.status,
	response_headers = CASE WHEN r.purged THEN NULL ELSE b.headers::JSONB END,
	response_body = CASE WHEN r.purged THEN NULL ELSE b.body END,
	body_omitted = CASE WHEN r.purged THEN false ELSE b.body_omitted END,
	resource_id = b.resource_id, error_summary = CASE WHEN r.purged THEN NULL ELSE b.error_summary END,
	expires_at = GREATEST(r.expires_at, COALESCE($1::TIMESTAMPTZ, now()) + b.ttl_ms * INTERVAL '1 millisecond')
FROM b JOIN f ON f.shard = b.shard AND f.epoch = b.epoch AND f.owner_region = b.region
WHERE r.shard = b.shard AND r.actor_scope = b.actor AND r.endpoint = b.endpoint AND r.key_hash = b.key_hash
	AND r.version = b.version AND r.lease_owner = b.owner AND r.state IN ('PENDING', 'IN_PROGRESS')
RETURNING b.i, r.version, r.lease_expires_at,
	r.expires_at + CASE WHEN r.compacted THEN 0 ELSE r.marker_ttl_ms END * INTERVAL '1 millisecond'`

// finishJob is one finish in the finish combiner: its prepared single
// update (finishSQL's arguments) and the batch's answer for it.
type finishJob struct {
	u *fencedUpdate

	ok       bool
	version  int64
	leaseExp *time.Time
	expires  time.Time
	err      error // the batch statement's error, as it came
}

// finishVals are a finish's own parameters: finishSet's ($10..$17) and,
// for finishStageSQL, the stage ($18). An empty headers, resourceID or
// errSummary is NULL, as is status unless hasStatus (snapshotArgs'
// rules).
type finishVals struct {
	state                  string
	status                 int32
	hasStatus              bool
	headers                string
	body                   []byte
	omitted                bool
	resourceID, errSummary string
	ttl                    int64
	stage                  string // finishStageSQL's $18; "" for finishSQL
}

// finishArgCount is the most parameters a finish adds ($10..$18).
const finishArgCount = 9

// finishValues are res's finish parameters for a lease of ttl.
func finishValues(res *store.Result, ttl time.Duration) finishVals {
	f := finishVals{state: string(res.State), body: res.Snapshot.Body, omitted: res.Snapshot.BodyOmitted,
		errSummary: res.ErrorSummary, ttl: ttl.Milliseconds(), stage: res.Stage}
	if stored(res.State) {
		f.status, f.hasStatus = int32(res.Snapshot.Status), true
		f.headers = headerText(res.Snapshot.Header)
		f.resourceID = res.Snapshot.ResourceID
	} else {
		f.body = nil // (snapshotArgs stores no body for a state without a snapshot)
	}
	return f
}

// optPtr is p when ok, else a nil *T (NULL).
func optPtr[T any](p *T, ok bool) *T {
	if ok {
		return p
	}
	return nil
}

// prepareFinish prepares l's finish with res (finishSQL, or
// finishStageSQL when res has a stage); see Finish.
func (s *Store) prepareFinish(l *store.Lease, res store.Result) fencedUpdate {
	q := finishSQL
	if res.Stage != "" {
		q = finishStageSQL
	}
	u := s.prepareText(l, l.Owner, "finish", q)
	u.self, u.finish, u.fin = true, true, finishValues(&res, l.TTL)
	return u
}

// finishFirst is the first attempt of a finish's runUpdate through the
// finish combiner: finishSQL alone when a slot is free, else a batch. A
// member the batch updated takes the lease updates u.run would; an
// ambiguous batch commit is returned as it came, so runUpdate settles it
// as its own (applied iff the row carries version+1 and our owner); any
// other member runs finishSQL alone, in this same attempt.
func (s *Store) finishFirst(ctx context.Context, u *fencedUpdate) (bool, error) {
	l := u.l
	key := memberKey{l.Scope.Actor, l.Scope.Endpoint, l.KeyHash}
	if s.finishes.alone(key) {
		defer s.finishes.leave(key)
		return u.run(ctx, s, s.pool)
	}
	m := &member[finishJob]{key: key, req: finishJob{u: u}}
	j := &m.req
	alone, err := s.finishes.join(ctx, m)
	switch {
	case err != nil:
		return false, err
	case alone:
		defer s.finishes.leave(m.key)
		return u.run(ctx, s, s.pool)
	case j.ok:
		l.Version, l.Owner, l.ExpiresAt, l.RecordExpiresAt = j.version, u.owner, time.Time{}, j.expires
		if j.leaseExp != nil {
			l.ExpiresAt = *j.leaseExp
		}
		return true, nil
	case isAmbiguous(stmtOutcome(j.err)):
		markUnreplicated(ctx, j.err)
		return false, j.err
	}
	return u.run(ctx, s, s.pool)
}

// finishBatchArgs are finishBatchSQL's arguments ($2 on) for batch: one
// array per column, each passed by pointer (pgArray; no boxing).
func finishBatchArgs(batch []*member[finishJob]) []any {
	n := len(batch)
	var a struct {
		shards, statuses                           pgArray[pgtype.Int4]
		epochs, versions, ttls                     pgArray[pgtype.Int8]
		actors, endpoints, owners, regions, states pgArray[pgtype.Text]
		headers, resourceIDs, errSummaries         pgArray[pgtype.Text]
		keys, bodies                               pgArray[bytea]
		omitted                                    pgArray[pgtype.Bool]
	}
	int4s, int8s, texts, bytes := make([]pgtype.Int4, 2*n), make([]pgtype.Int8, 3*n), make([]pgtype.Text, 8*n), make([]bytea, 2*n)
	a.shards, a.statuses = int4s[:n:n], int4s[n:]
	a.epochs, a.versions, a.ttls = int8s[:n:n], int8s[n:2*n:2*n], int8s[2*n:]
	a.actors, a.endpoints, a.owners, a.regions = texts[:n:n], texts[n:2*n:2*n], texts[2*n:3*n:3*n], texts[3*n:4*n:4*n]
	a.states, a.headers, a.resourceIDs, a.errSummaries = texts[4*n:5*n:5*n], texts[5*n:6*n:6*n], texts[6*n:7*n:7*n], texts[7*n:]
	a.keys, a.bodies = bytes[:n:n], bytes[n:]
	a.omitted = make(pgArray[pgtype.Bool], n)
	for i, m := range batch {
		u := m.req.u
		a.shards[i], a.epochs[i], a.regions[i] = pgInt4(int32(u.shard)), pgInt8(u.epoch), pgText(u.region)
		a.actors[i], a.endpoints[i], a.keys[i] = pgText(u.actor), pgText(u.endpoint), u.keyHash[:]
		a.versions[i], a.owners[i] = pgInt8(u.version), pgText(u.leaseOwner)
		f := &u.fin
		a.states[i], a.bodies[i] = pgText(f.state), f.body
		a.omitted[i], a.ttls[i] = pgtype.Bool{Bool: f.omitted, Valid: true}, pgInt8(f.ttl)
		if f.hasStatus {
			a.statuses[i] = pgInt4(f.status)
		}
		a.headers[i], a.resourceIDs[i], a.errSummaries[i] = optText(f.headers), optText(f.resourceID), optText(f.errSummary)
	}
	return []any{&a.shards, &a.epochs, &a.actors, &a.endpoints, &a.keys, &a.versions, &a.owners, &a.regions,
		&a.states, &a.statuses, &a.headers, &a.bodies, &a.omitted, &a.resourceIDs, &a.errSummaries, &a.ttls}
}

// finishBatch runs finishBatchSQL for batch and sets each member's answer.
func (s *Store) finishBatch(ctx context.Context, batch []*member[finishJob]) {
	ctx, cancel := context.WithTimeout(ctx, s.loop.Budget.Total)
	defer cancel()
	// The batch's own commit watch: a sync-rep warning on its commit is
	// every member's, not its leader's call's (syncrep.go).
	ctx, w := newWatch(ctx)
	s.metrics.batch(ctx, "finish", len(batch))
	n := len(batch)
	args := append([]any{s.now()}, finishBatchArgs(batch)...)
	rows, err := s.pool.Query(ctx, finishBatchSQL, args...)
	if err == nil {
		var (
			version  int64
			leaseExp *time.Time
			expires  time.Time
		)
		for rows.Next() {
			fds, raw := rawRow(rows)
			i, ok := rawInt8(fds, raw, 0)
			if !ok {
				if err = rows.Scan(&i, nil, nil, nil); err != nil {
					break
				}
			}
			if err = scanUpdated(rows, 1, &version, &leaseExp, &expires); err != nil {
				break
			}
			if i >= 1 && i <= int64(n) {
				j := &batch[i-1].req
				j.ok, j.version, j.leaseExp, j.expires = true, version, leaseExp, expires
			}
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
		for _, m := range batch {
			m.req.ok, m.req.err = false, err
		}
	}
}

// optText is a nullable text argument: "" is NULL.
func optText(s string) pgtype.Text { return pgtype.Text{String: s, Valid: s != ""} }
