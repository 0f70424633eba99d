package sqlstore

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Statements exported for the benchmarks' raw baselines, so the raw side
// runs exactly the SQL the store runs.
var (
	ClaimSQL   = claimSQL
	FinishSQL  = finishSQL
	RecordCols = recordCols
	// RecordColCount is the number of columns in RecordCols.
	RecordColCount = recordColCount
)

// PinClaimFirst keeps every endpoint on the claim-first path, so a
// benchmark can measure it alone.
func (s *Store) PinClaimFirst() {
	s.retries.mu.Lock()
	s.retries.pinned = true
	s.retries.mu.Unlock()
}

// ReadFirst reports whether an endpoint is on the read-first path.
func (s *Store) ReadFirst(endpoint string) bool { return s.retries.readFirst(endpoint) }

// ApplyMigrationOnce runs one portable migration file once, with no
// retry, so a test sees what its SQL does on a live store.
func ApplyMigrationOnce(ctx context.Context, pool *pgxpool.Pool, file string) error {
	b, err := migrations.ReadFile("migrations/portable/" + file)
	if err != nil {
		return err
	}
	_, err = pool.Exec(ctx, string(b))
	return err
}

// Queued reports how many claims and finishes wait in the group commit's
// queues, so a test can hold a slot and know when its batch is ready.
func (s *Store) Queued() (claims, finishes int) {
	if s.claims != nil {
		s.claims.mu.Lock()
		claims = len(s.claims.queue)
		s.claims.mu.Unlock()
	}
	if s.finishes != nil {
		s.finishes.mu.Lock()
		finishes = len(s.finishes.queue)
		s.finishes.mu.Unlock()
	}
	return claims, finishes
}

// The group commit's batch statements, for the plan checks.
var (
	ClaimBatchSQL  = claimBatchSQL
	FinishBatchSQL = finishBatchSQL
)
