package sqlstore

import (
	"context"
	"time"

	"github.com/idemcoord/idemcoord/store"
)

// Two-tier retention. A claim with ClaimRequest.ReplayTTL shorter than its
// TTL stores the record's expires_at at the end of the full-answer tier
// (lease + ReplayTTL after the claim, ReplayTTL after the result) and
// marker_ttl_ms = TTL - ReplayTTL. expires_at is when cleanup next acts on
// the record:
//
//   - a record at rest that still holds its full answer and has a marker
//     tier is compacted: its headers, body, error summary and lease owner
//     are dropped (its last stage stays: a retryable failure's recovery
//     point, from which a retry of an on_retry: complete endpoint resumes), compacted is set and expires_at moves on by
//     marker_ttl_ms. What stays is the dedup marker: scope, key hash,
//     fingerprint and its version, first-sent time, operation id, state,
//     status and resource id. A retry still finds the key, a different
//     request is still a Mismatch, and nothing runs again;
//   - any other record at rest is deleted (cleanupSQL).
//
// Records whose operation is running or unknown are never touched. The key
// is honoured until expires_at + marker_ttl_ms while the full answer is
// kept, expires_at after (Record.ExpiresAt); every write that extends
// expires_at extends it by the snapshot tier, so a result recorded late
// keeps its full answer for ReplayTTL and its marker for TTL.

// restingStates are the states cleanup may compact or delete.
const restingStates = `('COMPLETED', 'TERMINAL_FAILURE', 'RETRYABLE_FAILURE', 'CANCELLED')`

// compactSQL compacts up to $2 records due for it, oldest expiry first, by
// primary key: the shape of cleanupSQL, so one batch is one short
// transaction. The outer conditions repeat the inner ones so a record that
// changed in between (a takeover of a retryable failure) is left alone.
// The version moves on, as on any change of a record at rest.
const compactSQL = `UPDATE idempotency_records SET response_headers = NULL, response_body = NULL,
	error_summary = NULL, lease_owner = '', compacted = true, version = version + 1,
	expires_at = expires_at + marker_ttl_ms * INTERVAL '1 millisecond'
	WHERE (shard, actor_scope, endpoint, key_hash) IN (
		SELECT shard, actor_scope, endpoint, key_hash FROM idempotency_records
		WHERE expires_at <= COALESCE($1::TIMESTAMPTZ, now())
			AND state IN ` + restingStates + ` AND NOT compacted AND marker_ttl_ms > 0
		ORDER BY expires_at LIMIT $2)
	AND state IN ` + restingStates + ` AND NOT compacted AND marker_ttl_ms > 0`

// uncompactedExpiry is a takeover's expires_at before it is extended
// ($15 is the caller's marker tier in milliseconds): a compacted record's
// expires_at is its key's end, which as a whole record again is its
// expires_at plus the marker tier, so it moves back by that tier. The
// key's end never moves earlier.
const uncompactedExpiry = `CASE WHEN compacted THEN expires_at - GREATEST(marker_ttl_ms, $15::INT8) * INTERVAL '1 millisecond'
		ELSE expires_at END`

// compact runs one batch of compactSQL and returns how many records it
// compacted.
func (s *Store) compact(ctx context.Context, batch int) (int, error) {
	var n int64
	err := s.exec1(ctx, "compact", func(ctx context.Context) error {
		tag, err := s.pool.Exec(ctx, compactSQL, s.now(), batch)
		n = tag.RowsAffected()
		return err
	})
	if err == nil {
		s.metrics.compacted.Add(ctx, n)
	}
	return int(n), err
}

// snapshotTTL is how long after its last change a record claimed by req
// keeps its full answer: ReplayTTL when it is set and shorter than TTL,
// else TTL (one tier).
func snapshotTTL(req store.ClaimRequest) time.Duration {
	if req.ReplayTTL > 0 && req.ReplayTTL < req.TTL {
		return req.ReplayTTL
	}
	return req.TTL
}

// markerTTL is how long a record claimed by req is kept as a marker after
// its full answer: TTL - snapshotTTL, zero for one tier.
func markerTTL(req store.ClaimRequest) time.Duration { return req.TTL - snapshotTTL(req) }

// keyExpiresAt is until when a record's key is honoured, from its
// expires_at column: the marker tier is still ahead of a record not yet
// compacted.
func keyExpiresAt(expiresAt time.Time, marker time.Duration, compacted bool) time.Time {
	if compacted || expiresAt.IsZero() {
		return expiresAt
	}
	return expiresAt.Add(marker)
}

// recordSnapshotTTL is the full-answer tier rec was claimed with, as near
// as its times tell (lease + ReplayTTL, or lease + TTL for one tier): a
// result recorded later through a lease built from rec keeps its full
// answer that long.
func recordSnapshotTTL(rec store.Record) time.Duration {
	ttl := rec.ExpiresAt.Sub(rec.CreatedAt)
	if !rec.Compacted {
		ttl -= rec.MarkerTTL
	}
	return ttl
}
