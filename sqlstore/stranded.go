package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/idemcoord/idemcoord/store"
	"github.com/jackc/pgx/v5"
)

// Stranded returns a page of the queued operations whose lease has
// expired and whose request is stored, among scan.Runnable, the longest
// expired first. It only reads: a caller takes each over with TakeOver,
// which lets only one instance win.
func (s *Store) Stranded(ctx context.Context, scan store.StrandedScan) ([]store.Queued, error) {
	ctx, done := s.call(ctx) // a deadline for every statement: a frozen primary keeps its connections open
	defer done()
	if scan.Limit <= 0 {
		return nil, fmt.Errorf("sqlstore: stranded: Limit must be positive, got %d", scan.Limit)
	}
	args := []any{s.now(), scan.Limit}
	shares, after := scanWhere(scan, &args)
	if shares == "" {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT (SELECT q.request FROM async_requests q WHERE q.operation_id = r.operation_id),
			`+recordCols+`
		FROM idempotency_records r
		WHERE r.operation_id IN (SELECT operation_id FROM async_requests)
			AND r.state IN ('PENDING', 'IN_PROGRESS') AND r.lease_expires_at <= COALESCE($1::TIMESTAMPTZ, now())
			AND `+shares+after+`
		ORDER BY r.lease_expires_at, r.operation_id LIMIT $2`, args...)
	return scanQueued(rows, err, "stranded")
}

// scanWhere returns the scan's conditions on r (the records): the Runnable
// shares, parenthesised and OR-ed ("" when none matches anything), and
// the cursor's (" AND ..." or ""), appending their parameters to args.
func scanWhere(scan store.StrandedScan, args *[]any) (shares, after string) {
	arg := func(v any) string {
		*args = append(*args, v)
		return fmt.Sprintf("$%d", len(*args))
	}
	var ors []string
	for _, r := range scan.Runnable {
		if len(r.Endpoints) == 0 || (!r.AllShards && len(r.Shards) == 0) {
			continue
		}
		cond := "r.endpoint = ANY(" + arg(r.Endpoints) + "::TEXT[])"
		if !r.AllShards {
			shards := make([]int32, len(r.Shards))
			for i, sh := range r.Shards {
				shards[i] = int32(sh)
			}
			cond += " AND r.shard = ANY(" + arg(shards) + "::INT4[])"
		}
		ors = append(ors, "("+cond+")")
	}
	if len(ors) == 0 {
		return "", ""
	}
	if scan.After != (store.Cursor{}) {
		after = " AND (r.lease_expires_at, r.operation_id) > (" + arg(scan.After.LeaseExpiresAt) + "::TIMESTAMPTZ, " +
			arg(scan.After.OperationID) + "::UUID)"
	}
	return "(" + strings.Join(ors, " OR ") + ")", after
}

// scanQueued reads a scan's rows: the stored request (NULL when none),
// then recordCols.
func scanQueued(rows pgx.Rows, err error, op string) ([]store.Queued, error) {
	if err != nil {
		return nil, fmt.Errorf("sqlstore: %s: %w", op, giveUp(err))
	}
	defer rows.Close()
	var out []store.Queued
	for rows.Next() {
		var q store.Queued
		if err := scanRecord(rows, &q.Record, &q.Request); err != nil {
			return nil, fmt.Errorf("sqlstore: %s: %w", op, err)
		}
		out = append(out, q)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: %s: %w", op, giveUp(err))
	}
	return out, nil
}
