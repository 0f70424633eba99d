package sqlstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// finishBatchSQL is the finish of several leases in one statement (group
// commit, groupcommit.go): updateSQL with finishSet and ownCond per row of
// the unnest arrays. Each row's record is updated only if its shard's
// fence row, locked FOR SHARE, holds the row's epoch and is owned by its
// region (an unowned shard admits nobody), its version and lease owner
// are the row's, and it is still running; it then stores that row's own
// result exactly as finishSet does (a purged record stays purged; the
// record lives at least the row's TTL from now). It returns, per updated
// row, the row's index ($18) and what fencedUpdate.run reads. A row not
// updated says nothing here: its caller runs finishSQL alone.
const finishBatchSQL = `WITH b AS (
	SELECT * FROM unnest($2::INT4[], $3::INT8[], $4::TEXT[], $5::TEXT[], $6::BYTEA[], $7::INT8[], $8::TEXT[],
		$9::TEXT[], $10::TEXT[], $11::INT4[], $12::TEXT[], $13::BYTEA[], $14::BOOL[], $15::TEXT[], $16::TEXT[],
		$17::INT8[], $18::INT4[])
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

// finishArgs are the positions in fencedUpdate.args of finishSet's
// parameters ($10..$17).
const (
	argState = 9 + iota
	argStatus
	argHeaders
	argBody
	argBodyOmitted
	argResourceID
	argErrSummary
	argTTL
)

// finishFirst is the first attempt of a finish's runUpdate through the
// finish combiner: finishSQL alone when a slot is free, else a batch. A
// member the batch updated takes the lease updates u.run would; an
// ambiguous batch commit is returned as it came, so runUpdate settles it
// as its own (applied iff the row carries version+1 and our owner); any
// other member runs finishSQL alone, in this same attempt.
func (s *Store) finishFirst(ctx context.Context, u *fencedUpdate) (bool, error) {
	j := &finishJob{u: u}
	l := u.l
	m := &member[*finishJob]{key: batchKey(l.Scope.Actor, l.Scope.Endpoint, l.KeyHash), req: j}
	alone, err := s.finishes.join(ctx, m)
	switch {
	case err != nil:
		return false, err
	case alone:
		defer s.finishes.leave()
		return u.run(ctx, s, s.pool)
	case j.ok:
		l.Version, l.Owner, l.ExpiresAt, l.RecordExpiresAt = j.version, u.owner, time.Time{}, j.expires
		if j.leaseExp != nil {
			l.ExpiresAt = *j.leaseExp
		}
		return true, nil
	case j.err != nil && ambiguous(stmtOutcome(j.err)):
		return false, j.err
	}
	return u.run(ctx, s, s.pool)
}

// finishBatch runs finishBatchSQL for batch and sets each member's answer.
func (s *Store) finishBatch(ctx context.Context, batch []*member[*finishJob]) {
	ctx, cancel := context.WithTimeout(ctx, s.loop.Budget.Total)
	defer cancel()
	s.metrics.batch(ctx, "finish", len(batch))
	n := len(batch)
	var (
		shards, statuses, idx              = make([]int32, n), make([]pgtype.Int4, n), make([]int32, n)
		epochs, versions, ttls             = make([]int64, n), make([]int64, n), make([]int64, n)
		actors, endpoints, owners, regions = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		states                             = make([]string, n)
		headers, resourceIDs, errSummaries = make([]pgtype.Text, n), make([]pgtype.Text, n), make([]pgtype.Text, n)
		keys, bodies                       = make([][]byte, n), make([][]byte, n)
		omitted                            = make([]bool, n)
	)
	for i, m := range batch {
		u := m.req.u
		l, a := u.l, u.args
		shards[i], epochs[i], regions[i] = int32(l.Token.Shard), l.Token.Epoch, l.Token.Region
		actors[i], endpoints[i], keys[i] = l.Scope.Actor, l.Scope.Endpoint, a[5].([]byte)
		versions[i], owners[i], idx[i] = a[argVersion].(int64), a[7].(string), int32(i)
		states[i], bodies[i], omitted[i], ttls[i] = a[argState].(string), a[argBody].([]byte), a[argBodyOmitted].(bool), a[argTTL].(int64)
		if st := a[argStatus].(*int32); st != nil {
			statuses[i] = pgtype.Int4{Int32: *st, Valid: true}
		}
		if h := a[argHeaders].([]byte); h != nil {
			headers[i] = pgtype.Text{String: string(h), Valid: true}
		}
		resourceIDs[i], errSummaries[i] = optText(a[argResourceID].(*string)), optText(a[argErrSummary].(*string))
	}
	rows, err := s.pool.Query(ctx, finishBatchSQL, s.now(), shards, epochs, actors, endpoints, keys, versions, owners,
		regions, states, statuses, headers, bodies, omitted, resourceIDs, errSummaries, ttls, idx)
	if err == nil {
		for rows.Next() {
			var (
				i        int32
				version  int64
				leaseExp *time.Time
				expires  time.Time
			)
			if err = rows.Scan(&i, &version, &leaseExp, &expires); err != nil {
				break
			}
			if i >= 0 && int(i) < n {
				j := batch[i].req
				j.ok, j.version, j.leaseExp, j.expires = true, version, leaseExp, expires
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
			m.req.ok, m.req.err = false, err
		}
	}
}

// optText is a nullable text argument.
func optText(p *string) pgtype.Text {
	if p == nil {
		return pgtype.Text{}
	}
	return pgtype.Text{String: *p, Valid: true}
}
