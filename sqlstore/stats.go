package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/idemcoord/idemcoord/store"
)

// Stats counts records by state, stuck running records, and the cleanup
// backlog, each scan bounded by limit rows (limit <= 0 means
// DefaultStatsLimit). It is a read: it never changes a record.
func (s *Store) Stats(ctx context.Context, limit int, stuckAfter time.Duration) (store.Stats, error) {
	ctx, done := s.call(ctx) // a deadline for every statement: a frozen primary keeps its connections open
	defer done()
	if limit <= 0 {
		limit = store.DefaultStatsLimit
	}
	st := store.Stats{ByState: map[string]int64{}}
	for _, name := range []string{"PENDING", "IN_PROGRESS", "COMPLETED", "RETRYABLE_FAILURE", "TERMINAL_FAILURE", "OUTCOME_UNKNOWN", "CANCELLED"} {
		st.ByState[name] = 0
	}
	now := s.now()
	rows, err := s.pool.Query(ctx, `SELECT state, count(*),
			count(*) FILTER (WHERE state IN ('PENDING', 'IN_PROGRESS')
				AND lease_expires_at < COALESCE($1::TIMESTAMPTZ, now()) - $3 * interval '1 microsecond')
		FROM (SELECT state, lease_expires_at FROM idempotency_records LIMIT $2) r GROUP BY state`,
		now, limit, stuckAfter.Microseconds())
	if err != nil {
		return st, fmt.Errorf("sqlstore: stats: %w", err)
	}
	for rows.Next() {
		var state string
		var n, stuck int64
		if err := rows.Scan(&state, &n, &stuck); err != nil {
			rows.Close()
			return st, fmt.Errorf("sqlstore: stats: %w", err)
		}
		st.ByState[state] = n
		st.Stuck += stuck
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("sqlstore: stats: %w", err)
	}
	err = s.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM idempotency_records
		WHERE expires_at <= COALESCE($1::TIMESTAMPTZ, now())
			AND state IN ('COMPLETED', 'TERMINAL_FAILURE', 'RETRYABLE_FAILURE', 'CANCELLED') LIMIT $2) r`,
		now, limit).Scan(&st.CleanupBacklog)
	if err != nil {
		return st, fmt.Errorf("sqlstore: stats: %w", err)
	}
	return st, nil
}
