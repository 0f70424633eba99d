package sqlstore_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/idemcoord/idemcoord/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestRunLocalBusinessUniqueViolation: a 23505 raised by the business insert
// itself on a first run (here: a payment id that already exists, inserted by
// hand). Under SERIALIZABLE a 23505 may be a racer's commit in disguise, so
// RunLocal may re-check it through the claim; when the re-run inserts the
// claim again and fails again, it is a real business error and must reach
// the caller, wrapped, with nothing committed.
func TestRunLocalBusinessUniqueViolation(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t, newClock())
	createPayments(t, s)
	taken := uuid.New()
	if _, err := s.Pool().Exec(ctx, `INSERT INTO payments VALUES ($1, $2, 'by hand')`, taken, uuid.New()); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	fn := func(ctx context.Context, tx pgx.Tx, opID uuid.UUID) (store.Snapshot, error) {
		calls.Add(1)
		_, err := tx.Exec(ctx, `INSERT INTO payments VALUES ($1, $2, '1.00')`, taken, opID)
		return paymentSnapshot(taken), err
	}
	c, err := s.RunLocal(ctx, request(t, "tenant/alice", "dup-payment-id", `{"amount":"1.00"}`), fn)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		t.Errorf("RunLocal = %v, %v; want the business 23505 (payments_pkey) wrapped, not a contention error", c.Outcome, err)
	}
	if n := calls.Load(); n > 2 {
		t.Errorf("LocalFunc ran %d times for a deterministic constraint violation, want at most 2 (one run, one re-check)", n)
	}
	if got := count(t, s, `SELECT count(*) FROM payments`); got != 1 {
		t.Errorf("payments = %d, want only the hand-inserted one", got)
	}
	if got := count(t, s, `SELECT count(*) FROM idempotency_records`); got != 0 {
		t.Errorf("records = %d, want 0", got)
	}
	t.Logf("documented: RunLocal ran the LocalFunc %d time(s) and returned %q", calls.Load(), err)
}

// TestRunLocalTakeoverWithExistingBusinessRow documents the takeover path: a
// crashed worker's operation already has a business row (same operation id,
// inserted by hand here). A LocalFunc that inserts blindly hits the
// operation_id unique constraint; one that recognises its own row completes
// with it, without a second effect.
func TestRunLocalTakeoverWithExistingBusinessRow(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	s, _ := openStore(t, clock)
	createPayments(t, s)
	req := request(t, "tenant/alice", "takeover-dup", `{"amount":"3.00"}`)
	crashed, err := s.Begin(ctx, req)
	if err != nil || crashed.Outcome != store.FirstRun {
		t.Fatalf("begin = %v, %v", crashed.Outcome, err)
	}
	opID := crashed.Record.OperationID
	prior := uuid.New()
	if _, err := s.Pool().Exec(ctx, `INSERT INTO payments VALUES ($1, $2, '3.00')`, prior, opID); err != nil {
		t.Fatal(err)
	}
	clock.Advance(31 * time.Second)

	_, err = s.RunLocal(ctx, req, pay("3.00", nil))
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		t.Fatalf("blind insert on takeover: err = %v, want 23505", err)
	}
	rec, err := s.Read(ctx, req.Scope)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("documented: after the failed takeover run the record is %s, attempts %d, lease expired %v",
		rec.State, rec.Attempts, !rec.LeaseExpiresAt.After(clock.Now()))

	// The pattern that converges: treat a row already carrying the
	// operation id as this operation's own effect.
	idempotent := func(ctx context.Context, tx pgx.Tx, opID uuid.UUID) (store.Snapshot, error) {
		if _, err := tx.Exec(ctx, `INSERT INTO payments VALUES ($1, $2, '3.00') ON CONFLICT (operation_id) DO NOTHING`,
			uuid.New(), opID); err != nil {
			return store.Snapshot{}, err
		}
		var id uuid.UUID
		err := tx.QueryRow(ctx, `SELECT id FROM payments WHERE operation_id = $1`, opID).Scan(&id)
		return paymentSnapshot(id), err
	}
	clock.Advance(31 * time.Second) // past any lease the failed run may have left
	c, err := s.RunLocal(ctx, req, idempotent)
	if err != nil || c.Outcome != store.TakenOver {
		t.Fatalf("idempotent takeover = %v, %v; want takeover", c.Outcome, err)
	}
	if id, _ := onePayment(t, s); id != prior {
		t.Errorf("payment %v, want the prior one %v", id, prior)
	}
	if diff := cmp.Diff(paymentSnapshot(prior), c.Record.Snapshot); diff != "" {
		t.Errorf("snapshot (-want +got):\n%s", diff)
	}
}
