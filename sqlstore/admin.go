package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// cleanupSQL deletes up to $2 expired records in resting states, oldest
// expiry first, by primary key ($1 is the store's clock, NULL for now()).
// A record with a marker tier ahead is compacted first, never deleted at
// the end of its full-answer tier (compact.go).
// Cleanup and AuditedCleanup share it, so a cleanup an operator runs
// deletes exactly what the unattended one would.
const cleanupSQL = `DELETE FROM idempotency_records
	WHERE (shard, actor_scope, endpoint, key_hash) IN (
		SELECT shard, actor_scope, endpoint, key_hash FROM idempotency_records
		WHERE expires_at <= COALESCE($1::TIMESTAMPTZ, now())
			AND state IN ` + restingStates + ` AND (compacted OR marker_ttl_ms = 0)
		ORDER BY expires_at LIMIT $2)
	AND state IN ` + restingStates + ` AND (compacted OR marker_ttl_ms = 0)`

// AuditedCleanup is Cleanup run by an operator: the delete of one batch
// and its repair_audit row (operator, reason, the number deleted) commit in
// one transaction, so no operator's deletion goes unrecorded. It deletes
// what Cleanup deletes (batch <= 0 means DefaultCleanupBatch) and returns
// how many records it deleted; call it again while that equals batch.
// operator and reason are required (ErrNoOperator). An ambiguous commit is
// returned as an *AmbiguousCommitError: the batch and its audit row either
// both committed or neither did.
func (s *Store) AuditedCleanup(ctx context.Context, operator, reason string, batch int) (int, error) {
	if err := checkOperator(operator, reason); err != nil {
		return 0, err
	}
	if batch <= 0 {
		batch = DefaultCleanupBatch
	}
	var n int64
	err := s.RunTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, cleanupSQL, s.now(), batch)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		return s.audit(ctx, tx, operator, "cleanup", reason, nil, "", fmt.Sprintf("deleted=%d batch=%d", n, batch))
	})
	if err != nil {
		return 0, fmt.Errorf("sqlstore: cleanup: %w", err)
	}
	s.metrics.cleanedUp.Add(ctx, n)
	return int(n), nil
}

// ActorScopes returns up to limit actor scopes that have records and whose
// subject (the part after "/") is subject, for an operator who named an
// actor by subject alone. It scans the records table: an operator's aid,
// never on a request path.
func (s *Store) ActorScopes(ctx context.Context, subject string, limit int) ([]string, error) {
	ctx, done := s.call(ctx) // a deadline for every statement: a frozen primary keeps its connections open
	defer done()
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT actor_scope FROM idempotency_records
		WHERE right(actor_scope, length($1) + 1) = '/' || $1 ORDER BY actor_scope LIMIT $2`, subject, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: actor scopes: %w", err)
	}
	scopes, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("sqlstore: actor scopes: %w", err)
	}
	return scopes, nil
}
