package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/store"
)

// DefaultCleanupBatch bounds one cleanup statement: small enough that its
// locks and WAL stay short, large enough to keep up with a busy endpoint.
const DefaultCleanupBatch = 500

// Cleanup compacts up to batch records whose full-answer tier ended
// (compact.go), then deletes up to batch expired records in resting states
// (COMPLETED, CANCELLED, TERMINAL_FAILURE, RETRYABLE_FAILURE) with no
// marker tier ahead, oldest expiry first, by primary key. It returns how
// many records it compacted and deleted together: call it again while that
// is batch or more. It never touches PENDING, IN_PROGRESS or OUTCOME_UNKNOWN
// records: their effect may be under way or may have happened, and
// forgetting them would let a retry run the intent twice. A record expires
// when now >= expires_at. It also deletes up to batch stored async
// requests whose operation no longer runs.
func (s *Store) Cleanup(ctx context.Context, batch int) (int, error) {
	if batch <= 0 {
		batch = DefaultCleanupBatch
	}
	var amb *store.AmbiguousCommitError
	c, err := s.compact(ctx, batch)
	if errors.As(err, &amb) && ctx.Err() == nil {
		c, err = 0, nil // left to the next pass, like a delete
	}
	if err != nil {
		return 0, fmt.Errorf("sqlstore: cleanup: compact: %w", err)
	}
	var n int64
	err = s.exec1(ctx, "cleanup", func(ctx context.Context) error {
		tag, err := s.pool.Exec(ctx, cleanupSQL, s.now(), batch)
		n = tag.RowsAffected()
		return err
	})
	if errors.As(err, &amb) && ctx.Err() == nil {
		return c, nil // a delete of expired rows is safe to leave to the next pass
	}
	if err != nil {
		return c, fmt.Errorf("sqlstore: cleanup: %w", err)
	}
	s.metrics.cleanedUp.Add(ctx, n)
	s.cleanupRequests(ctx, batch)
	return c + int(n), nil
}

// cleanupRequests deletes up to batch stored async requests whose
// operation no longer runs (finished, unknown, or deleted): only a running
// operation may be taken over from its stored request. A failure is left
// to the next pass; the rows are inert.
func (s *Store) cleanupRequests(ctx context.Context, batch int) {
	err := s.exec1(ctx, "cleanup_requests", func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, `DELETE FROM async_requests WHERE operation_id IN (
			SELECT q.operation_id FROM async_requests q
			WHERE NOT EXISTS (SELECT 1 FROM idempotency_records r
				WHERE r.operation_id = q.operation_id AND r.state IN ('PENDING', 'IN_PROGRESS'))
			LIMIT $1)`, batch)
		return err
	})
	if err != nil {
		s.log.WarnContext(ctx, "cleanup of stored async requests failed", "err", err)
	}
}

// Purge removes an actor's stored response bodies, headers, error
// summaries and queued async requests (which may hold personal data) and
// marks the records purged. It
// keeps the minimal dedup marker (scope, key hash, fingerprint, state,
// operation id), so a late retry is still recognised and not run again. The
// purge is audited in the same transaction.
//
// Records whose operation is still running or unknown are purged too, and
// stay purged: the finish or resolution that comes later records its state
// and status but never stores a body, headers or a summary again. Their
// version is left alone so the worker that owns them can still finish
// (a record at rest gets a new version, as any change does).
func (s *Store) Purge(ctx context.Context, operator, reason, actor string) (int, error) {
	if err := checkOperator(operator, reason); err != nil {
		return 0, err
	}
	var n int64
	err := s.RunTx(ctx, func(tx pgx.Tx) error {
		// The actor's records all live on its shard: naming it keeps the
		// update on one stretch of CockroachDB's primary key (shard first)
		// instead of a scan of every region. A store without a shard count
		// (never bootstrapped) may only hold records from before: scan.
		var shards int
		err := tx.QueryRow(ctx, `SELECT shards FROM shard_config WHERE id = 1`).Scan(&shards)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		where, args := `actor_scope = $1`, []any{actor, s.now()}
		if err == nil {
			where, args = `shard = $3 AND actor_scope = $1`, append(args, shard.Of(actor, shards))
		}
		tag, err := tx.Exec(ctx, `UPDATE idempotency_records SET response_body = NULL, response_headers = NULL,
			error_summary = NULL, body_omitted = false, purged = true, member_digests = NULL,
			version = CASE WHEN state IN ('PENDING', 'IN_PROGRESS', 'OUTCOME_UNKNOWN') THEN version ELSE version + 1 END,
			updated_at = COALESCE($2::TIMESTAMPTZ, now())
			WHERE `+where+` AND NOT purged`, args...)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		// A queued request may carry personal data too. Its operation then
		// waits for the client's retry, which sends the request again.
		if _, err := tx.Exec(ctx, `DELETE FROM async_requests WHERE actor_scope = $1`, actor); err != nil {
			return err
		}
		return s.audit(ctx, tx, operator, "purge", reason, nil, actor, fmt.Sprintf("records=%d", n))
	})
	if err != nil {
		return 0, fmt.Errorf("sqlstore: purge: %w", err)
	}
	return int(n), nil
}
