package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// createPayments creates the business table RunLocal writes into. The
// unique operation_id is the business-level last line of defence.
func createPayments(t testing.TB, s *sqlstore.Store) {
	t.Helper()
	if _, err := s.Pool().Exec(context.Background(),
		`CREATE TABLE payments (id UUID PRIMARY KEY, operation_id UUID NOT NULL UNIQUE, amount TEXT)`); err != nil {
		t.Fatal(err)
	}
}

// paymentSnapshot is the response a payment answers with.
func paymentSnapshot(id uuid.UUID) store.Snapshot {
	return store.Snapshot{Status: 201, Header: http.Header{"Content-Type": {"application/json"}},
		Body: fmt.Appendf(nil, `{"payment_id":%q}`, id), ResourceID: id.String()}
}

// pay returns a LocalFunc that inserts one payment for the operation and
// counts its calls in calls (if not nil).
func pay(amount string, calls *atomic.Int64) sqlstore.LocalFunc {
	return func(ctx context.Context, tx pgx.Tx, opID uuid.UUID) (store.Snapshot, error) {
		if calls != nil {
			calls.Add(1)
		}
		id := uuid.New()
		if _, err := tx.Exec(ctx, `INSERT INTO payments (id, operation_id, amount) VALUES ($1, $2, $3)`,
			id, opID, amount); err != nil {
			return store.Snapshot{}, err
		}
		return paymentSnapshot(id), nil
	}
}

// onePayment asserts that exactly one payment exists and returns it.
func onePayment(t testing.TB, s *sqlstore.Store) (id, opID uuid.UUID) {
	t.Helper()
	rows, err := s.Pool().Query(context.Background(), `SELECT id, operation_id FROM payments`)
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ ID, OpID uuid.UUID }
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("payments = %v, want exactly one", got)
	}
	return got[0].ID, got[0].OpID
}

func TestRunLocalConcurrentOneEffect(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t, newClock())
	createPayments(t, s)
	req := request(t, "tenant/alice", "local-race", `{"amount":"10.00"}`)
	const n = 64
	claims := make([]store.Claim, n)
	var calls atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			c, err := s.RunLocal(ctx, req, pay("10.00", &calls))
			if err != nil {
				t.Errorf("racer %d: %v", i, err)
			}
			claims[i] = c
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	outcomes := make([]store.Outcome, n)
	var winner *store.Claim
	for i := range claims {
		outcomes[i] = claims[i].Outcome
		if claims[i].Outcome == store.FirstRun {
			winner = &claims[i]
		}
	}
	got := tally(outcomes)
	if got["first_run"] != 1 || got["first_run"]+got["replay"]+got["in_progress"] != n {
		t.Fatalf("outcomes = %v, want 1 first_run and the rest replay (or in_progress)", got)
	}
	payID, payOp := onePayment(t, s)
	if payOp != winner.Record.OperationID {
		t.Errorf("payment's operation id %v, winner's %v", payOp, winner.Record.OperationID)
	}
	if diff := cmp.Diff(paymentSnapshot(payID), winner.Record.Snapshot); diff != "" {
		t.Errorf("winner's snapshot (-want +got):\n%s", diff)
	}
	for i, c := range claims {
		if c.Outcome != store.Replayed {
			continue
		}
		if c.Record.OperationID != winner.Record.OperationID {
			t.Errorf("racer %d replayed operation %v, winner ran %v", i, c.Record.OperationID, winner.Record.OperationID)
		}
		if diff := cmp.Diff(winner.Record.Snapshot, c.Record.Snapshot); diff != "" {
			t.Errorf("racer %d replayed snapshot (-winner +replay):\n%s", i, diff)
		}
	}
	if got := count(t, s, `SELECT count(*) FROM idempotency_records`); got != 1 {
		t.Errorf("records = %d, want 1", got)
	}
	t.Logf("outcomes %v; LocalFunc ran %d time(s)", got, calls.Load())
}

// refuse599 makes saving a result with status 599 fail, as a full disk or a
// constraint would: the failure happens after the business write.
const refuse599 = `
CREATE FUNCTION refuse_599() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.response_status = 599 THEN
		RAISE EXCEPTION 'test: refusing to save status 599';
	END IF;
	RETURN NEW;
END $$;
CREATE TRIGGER refuse_599 BEFORE UPDATE ON idempotency_records
	FOR EACH ROW EXECUTE FUNCTION refuse_599();`

func TestRunLocalFailureLeavesNothing(t *testing.T) {
	errDeclined := errors.New("card declined")
	tests := []struct {
		name string
		fn   sqlstore.LocalFunc
		// check inspects RunLocal's error.
		check func(t *testing.T, err error)
	}{{
		name: "saving the result fails",
		fn: func(ctx context.Context, tx pgx.Tx, opID uuid.UUID) (store.Snapshot, error) {
			snap, err := pay("5.00", nil)(ctx, tx, opID)
			snap.Status = 599
			return snap, err
		},
		check: func(t *testing.T, err error) {
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "P0001" {
				t.Errorf("err = %v, want the trigger's P0001 wrapped", err)
			}
		},
	}, {
		name: "LocalFunc fails after its insert",
		fn: func(ctx context.Context, tx pgx.Tx, opID uuid.UUID) (store.Snapshot, error) {
			if _, err := pay("5.00", nil)(ctx, tx, opID); err != nil {
				return store.Snapshot{}, err
			}
			return store.Snapshot{}, errDeclined
		},
		check: func(t *testing.T, err error) {
			if !errors.Is(err, errDeclined) {
				t.Errorf("err = %v, want the LocalFunc's error", err)
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, _ := openStore(t, newClock())
			createPayments(t, s)
			if _, err := s.Pool().Exec(ctx, refuse599); err != nil {
				t.Fatal(err)
			}
			req := request(t, "tenant/alice", "fails", `{"amount":"5.00"}`)
			c, err := s.RunLocal(ctx, req, tt.fn)
			if err == nil {
				t.Fatalf("RunLocal = %v, want an error", c.Outcome)
			}
			tt.check(t, err)
			if got := count(t, s, `SELECT count(*) FROM payments`); got != 0 {
				t.Errorf("payments = %d, want 0: the business write must roll back with the claim", got)
			}
			if got := count(t, s, `SELECT count(*) FROM idempotency_records`); got != 0 {
				t.Errorf("records = %d, want 0: the claim must roll back", got)
			}
			// The key is free: a retry runs the intent, once.
			c, err = s.RunLocal(ctx, req, pay("5.00", nil))
			if err != nil || c.Outcome != store.FirstRun {
				t.Fatalf("retry = %v, %v; want first_run", c.Outcome, err)
			}
			onePayment(t, s)
		})
	}
}

// TestRunLocalTakeoverFailureReleasesKey holds RunLocal to its doc: "If fn
// or saving the result fails, everything rolls back and the key stays
// unclaimed." On the takeover path a failing LocalFunc must not leave the key
// held by a lease nobody owns.
func TestRunLocalTakeoverFailureReleasesKey(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	s, _ := openStore(t, clock)
	createPayments(t, s)
	req := request(t, "tenant/alice", "takeover-fails", `{"amount":"4.00"}`)
	if c, err := s.Begin(ctx, req); err != nil || c.Outcome != store.FirstRun {
		t.Fatalf("begin = %v, %v", c.Outcome, err)
	}
	clock.Advance(31 * time.Second)
	errTransient := errors.New("transient")
	_, err := s.RunLocal(ctx, req, func(context.Context, pgx.Tx, uuid.UUID) (store.Snapshot, error) {
		return store.Snapshot{}, errTransient
	})
	if !errors.Is(err, errTransient) {
		t.Fatalf("err = %v, want the LocalFunc's error", err)
	}
	// An immediate retry must be able to run it; it must not wait out a
	// fresh lease that no worker holds.
	c, err := s.RunLocal(ctx, req, pay("4.00", nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Outcome != store.TakenOver {
		t.Errorf("retry after a failed takeover run = %v (retry after %v), want takeover: the failed run's takeover was committed on its own and not rolled back",
			c.Outcome, c.RetryAfter)
	}
	rec, err := s.Read(ctx, req.Scope)
	if err != nil {
		t.Fatal(err)
	}
	if rec.State == idempotency.InProgress {
		t.Logf("record left %s by a failed run, attempts %d", rec.State, rec.Attempts)
	}
}
