package sqlstore

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// AuditTx writes an audit row in tx, a transaction of RunTx on this
// store: for a repair made outside the store contract (the patroni
// backend's move of shards between clusters) that must still be audited
// in the transaction that makes it. It returns store.ErrNoOperator
// without an operator or a reason.
func (s *Store) AuditTx(ctx context.Context, tx pgx.Tx, operator, action, reason, detail string) error {
	return s.audit(ctx, tx, operator, action, reason, nil, "", detail)
}
