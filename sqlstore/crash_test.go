package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// crashPoint is where a charge worker dies.
type crashPoint string

const (
	noCrash              crashPoint = ""
	crashBeforeClaim     crashPoint = "before the claim"
	crashAfterClaim      crashPoint = "after the claim"
	crashAfterChargeSent crashPoint = "after recording charge_sent, before the charge"
	crashAfterCharge     crashPoint = "after the charge, before recording charge_done"
	crashAfterChargeDone crashPoint = "after recording charge_done, before Finish"
	crashAfterFinish     crashPoint = "after Finish, before the response"
)

var errCrashed = errors.New("worker crashed")

// ledgerDDL has no unique constraint on operation_id on purpose: a double
// charge must be visible, not refused.
const ledgerDDL = `CREATE TABLE ledger (id UUID PRIMARY KEY, operation_id UUID NOT NULL, amount TEXT)`

func chargeSnapshot(id uuid.UUID) store.Snapshot {
	return store.Snapshot{Status: 201, Header: http.Header{"Content-Type": {"application/json"}},
		Body: fmt.Appendf(nil, `{"charge_id":%q}`, id), ResourceID: id.String()}
}

// chargeWorker follows the protocol for a charge whose effect is a ledger
// row written in its own transaction: as far as the store is concerned, an
// external call. It records a stage before the call and looks the call up
// by operation id when it resumes a takeover from that stage.
type chargeWorker struct {
	store   *sqlstore.Store
	crashAt crashPoint
}

// answer is what a caller gets back.
type answer struct {
	outcome    store.Outcome
	snapshot   store.Snapshot
	retryAfter time.Duration
}

func (w *chargeWorker) crash(at crashPoint) error {
	if w.crashAt != at {
		return nil
	}
	w.store.Close() // the process is gone: its pool with it
	return fmt.Errorf("%w %s", errCrashed, at)
}

func (w *chargeWorker) run(ctx context.Context, req store.ClaimRequest, amount string) (answer, error) {
	if err := w.crash(crashBeforeClaim); err != nil {
		return answer{}, err
	}
	c, err := w.store.Begin(ctx, req)
	if err != nil {
		return answer{}, err
	}
	switch c.Outcome {
	case store.Replayed:
		return answer{outcome: c.Outcome, snapshot: c.Record.Snapshot}, nil
	case store.InFlight:
		return answer{outcome: c.Outcome, retryAfter: c.RetryAfter}, nil
	case store.FirstRun, store.TakenOver:
	default:
		return answer{}, fmt.Errorf("claim outcome %v", c.Outcome)
	}
	l := c.Lease
	if err := w.crash(crashAfterClaim); err != nil {
		return answer{}, err
	}
	finish := func(id uuid.UUID) (answer, error) {
		snap := chargeSnapshot(id)
		if err := w.store.Finish(ctx, l, store.Result{State: idempotency.Completed, Snapshot: snap}); err != nil {
			return answer{}, err
		}
		if err := w.crash(crashAfterFinish); err != nil {
			return answer{}, err
		}
		return answer{outcome: c.Outcome, snapshot: snap}, nil
	}
	if c.Outcome == store.TakenOver && (l.LastStage == "charge_sent" || l.LastStage == "charge_done") {
		// Was it charged? Ask the downstream by operation id.
		var id uuid.UUID
		err := w.store.Pool().QueryRow(ctx, `SELECT id FROM ledger WHERE operation_id = $1`, l.OperationID).Scan(&id)
		switch {
		case err == nil:
			return finish(id)
		case !errors.Is(err, pgx.ErrNoRows):
			return answer{}, err
		}
	}
	if err := w.store.RecordStage(ctx, l, "charge_sent"); err != nil {
		return answer{}, err
	}
	if err := w.crash(crashAfterChargeSent); err != nil {
		return answer{}, err
	}
	id := uuid.New()
	if _, err := w.store.Pool().Exec(ctx, `INSERT INTO ledger (id, operation_id, amount) VALUES ($1, $2, $3)`,
		id, l.OperationID, amount); err != nil {
		return answer{}, err
	}
	if err := w.crash(crashAfterCharge); err != nil {
		return answer{}, err
	}
	if err := w.store.RecordStage(ctx, l, "charge_done"); err != nil {
		return answer{}, err
	}
	if err := w.crash(crashAfterChargeDone); err != nil {
		return answer{}, err
	}
	return finish(id)
}

// recover retries like a client until it gets an answer, moving the clock
// past a live lease instead of sleeping. It returns the answer and how many
// times it was told to wait.
func recoverAnswer(t *testing.T, w *chargeWorker, clock *clock.Fake, req store.ClaimRequest) (answer, int) {
	t.Helper()
	waits := 0
	for range 5 {
		a, err := w.run(context.Background(), req, "25.00")
		if err != nil {
			t.Fatalf("recovery: %v", err)
		}
		if a.outcome != store.InFlight {
			return a, waits
		}
		waits++
		clock.Advance(a.retryAfter + time.Millisecond)
	}
	t.Fatal("recovery: no answer after 5 tries")
	return answer{}, 0
}

func TestCrashRecovery(t *testing.T) {
	tests := []struct {
		at crashPoint
		// waits says whether the retry must wait out the crashed worker's lease.
		waits     bool
		recovered store.Outcome
	}{
		{crashBeforeClaim, false, store.FirstRun},
		{crashAfterClaim, true, store.TakenOver},
		{crashAfterChargeSent, true, store.TakenOver},
		{crashAfterCharge, true, store.TakenOver},
		{crashAfterChargeDone, true, store.TakenOver},
		{crashAfterFinish, false, store.Replayed},
	}
	for _, tt := range tests {
		t.Run(string(tt.at), func(t *testing.T) {
			t.Parallel() // own database and clock per case
			ctx := context.Background()
			clock := newClock()
			s, dsn := openStore(t, clock)
			if _, err := s.Pool().Exec(ctx, ledgerDDL); err != nil {
				t.Fatal(err)
			}
			req := request(t, "tenant/alice", "charge", `{"amount":"25.00"}`)

			doomed, err := sqlstore.Open(ctx, sqlstore.Config{Migrate: true, DSN: dsn, DBClock: clock, Seed: 2})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(doomed.Close) // if it never reached its crash
			_, err = (&chargeWorker{store: doomed, crashAt: tt.at}).run(ctx, req, "25.00")
			if !errors.Is(err, errCrashed) {
				t.Fatalf("doomed worker: %v, want a crash %s", err, tt.at)
			}

			a, waits := recoverAnswer(t, &chargeWorker{store: s}, clock, req)
			if a.outcome != tt.recovered {
				t.Errorf("recovery outcome = %v, want %v", a.outcome, tt.recovered)
			}
			if (waits > 0) != tt.waits {
				t.Errorf("recovery waited %d times, want waiting = %v", waits, tt.waits)
			}
			var ids []uuid.UUID
			rows, err := s.Pool().Query(ctx, `SELECT id FROM ledger WHERE operation_id = (
				SELECT operation_id FROM idempotency_records)`)
			if err != nil {
				t.Fatal(err)
			}
			if ids, err = pgx.CollectRows(rows, pgx.RowTo[uuid.UUID]); err != nil {
				t.Fatal(err)
			}
			if len(ids) != 1 {
				t.Fatalf("ledger rows for the operation = %d, want exactly 1", len(ids))
			}
			if got := count(t, s, `SELECT count(*) FROM ledger`); got != 1 {
				t.Errorf("ledger rows = %d, want 1", got)
			}
			rec, err := s.Read(ctx, req.Scope)
			if err != nil {
				t.Fatal(err)
			}
			if rec.State != idempotency.Completed {
				t.Errorf("record is %s, want COMPLETED", rec.State)
			}
			want := chargeSnapshot(ids[0])
			if diff := cmp.Diff(want, a.snapshot); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want, rec.Snapshot); diff != "" {
				t.Errorf("stored snapshot (-want +got):\n%s", diff)
			}
			// Every later retry is the same answer.
			if again, _ := recoverAnswer(t, &chargeWorker{store: s}, clock, req); again.outcome != store.Replayed ||
				!cmp.Equal(want, again.snapshot) {
				t.Errorf("later retry = %v %+v, want replay of the answer", again.outcome, again.snapshot)
			}
		})
	}
}

// TestRunLocalCrashBeforeResponse: the local transaction committed, the
// caller died before it saw the answer. The retry replays; one payment.
func TestRunLocalCrashBeforeResponse(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	s, dsn := openStore(t, clock)
	createPayments(t, s)
	req := request(t, "tenant/alice", "local-crash", `{"amount":"8.00"}`)

	doomed, err := sqlstore.Open(ctx, sqlstore.Config{Migrate: true, DSN: dsn, DBClock: clock, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(doomed.Close)
	lost, err := doomed.RunLocal(ctx, req, pay("8.00", nil))
	if err != nil || lost.Outcome != store.FirstRun {
		t.Fatalf("doomed RunLocal = %v, %v", lost.Outcome, err)
	}
	doomed.Close() // the answer never left the process

	c, err := s.RunLocal(ctx, req, pay("8.00", nil))
	if err != nil || c.Outcome != store.Replayed {
		t.Fatalf("retry = %v, %v; want replay", c.Outcome, err)
	}
	id, opID := onePayment(t, s)
	if opID != c.Record.OperationID {
		t.Errorf("payment's operation %v, replayed operation %v", opID, c.Record.OperationID)
	}
	if diff := cmp.Diff(paymentSnapshot(id), c.Record.Snapshot); diff != "" {
		t.Errorf("replayed snapshot (-want +got):\n%s", diff)
	}
}

// TestRunLocalCrashInsideTransaction: the worker's connection dies inside the
// local transaction, after the business insert. Nothing commits; the retry
// runs the intent once.
func TestRunLocalCrashInsideTransaction(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t, newClock())
	createPayments(t, s)
	req := request(t, "tenant/alice", "local-crash-mid", `{"amount":"8.00"}`)
	_, err := s.RunLocal(ctx, req, func(ctx context.Context, tx pgx.Tx, opID uuid.UUID) (store.Snapshot, error) {
		if _, err := pay("8.00", nil)(ctx, tx, opID); err != nil {
			return store.Snapshot{}, err
		}
		_, err := tx.Exec(ctx, `SELECT pg_terminate_backend(pg_backend_pid())`)
		return store.Snapshot{}, err
	})
	if err == nil {
		t.Fatal("RunLocal survived its backend's death")
	}
	if got := count(t, s, `SELECT count(*) FROM payments`) + count(t, s, `SELECT count(*) FROM idempotency_records`); got != 0 {
		t.Fatalf("%d rows survived a transaction that never committed", got)
	}
	c, err := s.RunLocal(ctx, req, pay("8.00", nil))
	if err != nil || c.Outcome != store.FirstRun {
		t.Fatalf("retry = %v, %v; want first_run", c.Outcome, err)
	}
	onePayment(t, s)
}
