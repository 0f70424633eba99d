package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/idemcoord/idemcoord/store"
	"github.com/jackc/pgx/v5"
)

// ListOperations returns a page of the operations f selects, oldest change
// first, for an operator, and writes the access to the repair audit in the
// same transaction (a list shows actor scopes). It is a scan of the
// selected shards' records: run it narrowed to a region or a shard and to
// the states left in flight, as idemctl op list does.
func (s *Store) ListOperations(ctx context.Context, operator, reason string, f store.OperationFilter) (store.OperationPage, error) {
	if len(f.Shards) == 0 || len(f.States) == 0 || f.Limit <= 0 || f.Limit > 1000 {
		return store.OperationPage{}, errors.New("sqlstore: list operations: shards, states and a limit of 1 to 1000 are required")
	}
	afterAt, afterID := time.Time{}, uuid.Nil
	if f.After != "" {
		at, id, ok := strings.Cut(f.After, "_")
		t, terr := time.Parse(time.RFC3339Nano, at)
		u, uerr := uuid.Parse(id)
		if !ok || terr != nil || uerr != nil {
			return store.OperationPage{}, fmt.Errorf("sqlstore: list operations: cursor %q is not one this command printed", f.After)
		}
		afterAt, afterID = t, u
	}
	shards := make([]int32, len(f.Shards))
	for i, sh := range f.Shards {
		shards[i] = int32(sh)
	}
	var page store.OperationPage
	err := s.RunTx(ctx, func(tx pgx.Tx) error {
		page = store.OperationPage{}
		rows, err := tx.Query(ctx, `SELECT `+recordCols+` FROM idempotency_records
			WHERE shard = ANY($1) AND state = ANY($2) AND ($3 = '' OR endpoint = $3)
			  AND ($4::INT8 = 0 OR updated_at < now() - $4::INT8 * INTERVAL '1 microsecond')
			  AND (updated_at, operation_id) > ($5, $6)
			ORDER BY updated_at, operation_id LIMIT $7`,
			shards, f.States, f.Endpoint, f.OlderThan.Microseconds(), afterAt, afterID, f.Limit+1)
		if err != nil {
			return err
		}
		for rows.Next() {
			var r store.Record
			if err := scanRecord(rows, &r); err != nil {
				rows.Close()
				return err
			}
			page.Operations = append(page.Operations, r)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(page.Operations) > f.Limit {
			page.Operations = page.Operations[:f.Limit]
			last := page.Operations[f.Limit-1]
			page.Next = last.UpdatedAt.UTC().Format(time.RFC3339Nano) + "_" + last.OperationID.String()
		}
		detail := fmt.Sprintf("shards=%d states=%s endpoint=%s older_than=%s rows=%d", len(f.Shards),
			strings.Join(f.States, ","), f.Endpoint, f.OlderThan, len(page.Operations))
		return s.audit(ctx, tx, operator, "list", reason, nil, "", detail)
	})
	return page, err
}
