package sqlstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/idemcoord/idemcoord/store"
	"github.com/jackc/pgx/v5"
)

// Audit writes one repair audit row on its own: for repairs whose change
// is not in this store (an ownership state change in etcd, a region
// failover), written before the change so none goes unrecorded. detail
// names what was changed; a detail starting "shard=N " is found by
// AuditFilter.Shard. Operator and reason are required (ErrNoOperator).
func (s *Store) Audit(ctx context.Context, operator, action, reason, detail string) error {
	err := s.RunTx(ctx, func(tx pgx.Tx) error {
		return s.audit(ctx, tx, operator, action, reason, nil, "", detail)
	})
	if err != nil {
		return fmt.Errorf("sqlstore: audit %s: %w", action, err)
	}
	return nil
}

// auditWhere is the condition of an AuditFilter, over the arguments
// auditArgs returns.
const auditWhere = `WHERE ($1::TIMESTAMPTZ IS NULL OR at >= $1)
		  AND ($2::TEXT IS NULL OR detail LIKE $2)
		  AND ($3::TEXT IS NULL OR actor_scope = $3)
		  AND ($4::UUID IS NULL OR operation_id = $4)
		  AND ($5::TEXT IS NULL OR action = $5)`

// auditArgs returns the arguments of auditWhere.
func auditArgs(f store.AuditFilter) []any {
	var since *time.Time
	if !f.Since.IsZero() {
		since = &f.Since
	}
	var shard *string
	if f.Shard != nil {
		p := "shard=" + strconv.Itoa(*f.Shard) + " %"
		shard = &p
	}
	var actor, action *string
	if f.Actor != "" {
		actor = &f.Actor
	}
	if f.Action != "" {
		action = &f.Action
	}
	return []any{since, shard, actor, f.Operation, action}
}

// CountAudit returns how many audit rows f selects (Limit and Offset
// aside): what a page of QueryAudit is "N of".
func (s *Store) CountAudit(ctx context.Context, f store.AuditFilter) (int, error) {
	ctx, done := s.call(ctx) // a deadline for every statement: a frozen primary keeps its connections open
	defer done()
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM repair_audit `+auditWhere, auditArgs(f)...).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlstore: count audit: %w", err)
	}
	return int(n), nil
}

// QueryAudit returns the audit rows f selects, newest first.
func (s *Store) QueryAudit(ctx context.Context, f store.AuditFilter) ([]store.AuditRow, error) {
	ctx, done := s.call(ctx) // a deadline for every statement: a frozen primary keeps its connections open
	defer done()
	if f.Limit <= 0 {
		f.Limit = 100
	}
	rows, err := s.pool.Query(ctx, `SELECT id, at, operator, action, reason, operation_id, COALESCE(actor_scope, ''), detail
		FROM repair_audit `+auditWhere+`
		ORDER BY at DESC, id LIMIT $6 OFFSET $7`, append(auditArgs(f), f.Limit, max(f.Offset, 0))...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: read audit: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.AuditRow, error) {
		var a store.AuditRow
		err := r.Scan(&a.ID, &a.At, &a.Operator, &a.Action, &a.Reason, &a.OperationID, &a.ActorScope, &a.Detail)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: read audit: %w", err)
	}
	return out, nil
}
