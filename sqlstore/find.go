package sqlstore

import (
	"context"
	"errors"

	"github.com/idemcoord/idemcoord/store"
	"github.com/jackc/pgx/v5"
)

// AdminFind returns the record of one key (actor scope, endpoint, key; the
// key is hashed as claims hash it), for an operator answering a ticket
// that quotes a key, and writes the access to the repair audit in the same
// transaction. It returns ErrNotFound when the key has no record.
func (s *Store) AdminFind(ctx context.Context, operator, reason string, sc store.Scope) (store.Record, error) {
	var rec store.Record
	h := sc.Key.Hash()
	err := s.RunTx(ctx, func(tx pgx.Tx) error {
		err := scanRecord(tx.QueryRow(ctx, `SELECT `+recordCols+` FROM idempotency_records
			WHERE actor_scope = $1 AND endpoint = $2 AND key_hash = $3`, sc.Actor, sc.Endpoint, h[:]), &rec)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		return s.audit(ctx, tx, operator, "lookup", reason, &rec.OperationID, rec.Scope.Actor, "by key")
	})
	return rec, err
}
