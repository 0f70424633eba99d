package sqlstore_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// proxied opens one database twice: directly, and through a toxiproxy whose
// store logs into the returned recorder.
func proxied(t *testing.T, clock *clock.Fake) (direct, via *sqlstore.Store, p *pgProxy, logs *logRecorder) {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	direct = openDSN(t, dsn, clock)
	p = newPGProxy(t, dsn)
	logs = &logRecorder{}
	via, err := sqlstore.Open(context.Background(), sqlstore.Config{Migrate: true, DSN: p.dsn, DBClock: clock, MaxConns: 4, Seed: 5,
		Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(via.Close)
	return direct, via, p, logs
}

// claimStatement matches the claim: the claim CTE (which inserts into
// idempotency_records), or the idem_claim call of older stores.
func claimStatement(sql string) bool {
	return statement("idem_claim")(sql) || statement("INSERT INTO idempotency_records")(sql)
}

func isCommit(sql string) bool { return strings.EqualFold(strings.TrimSpace(sql), "commit") }

// cutCommitFrom returns a LocalFunc that pays and, on its first run, installs
// a tripwire on the COMMIT that follows it.
func cutCommitFrom(t *testing.T, p *pgProxy, mode cutMode, calls *atomic.Int64, w **tripwire) sqlstore.LocalFunc {
	return func(ctx context.Context, tx pgx.Tx, opID uuid.UUID) (store.Snapshot, error) {
		snap, err := pay("6.00", nil)(ctx, tx, opID)
		if calls.Add(1) == 1 {
			*w, _ = p.cut(t, "commit", mode, true, isCommit)
		}
		return snap, err
	}
}

var lossModes = []struct {
	name string
	mode cutMode
}{
	{"answer lost (server to client)", loseAnswer},
	{"request lost (client to server)", loseRequest},
}

func TestAmbiguousLocalCommit(t *testing.T) {
	for _, tt := range lossModes {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			direct, via, p, logs := proxied(t, newClock())
			createPayments(t, direct)
			req := request(t, "tenant/alice", "ambiguous-local", `{"amount":"6.00"}`)
			var calls atomic.Int64
			var w *tripwire
			c, err := via.RunLocal(ctx, req, cutCommitFrom(t, p, tt.mode, &calls, &w))
			if w == nil || !w.Fired() {
				t.Fatal("the tripwire never cut the COMMIT")
			}
			if err != nil {
				t.Errorf("RunLocal: %v (%T, logs %q): a COMMIT cut off with its connection must be resolved inside RunLocal",
					err, err, logs.find(""))
				// Safety still holds if the caller retries: one effect.
				if c, err = via.RunLocal(ctx, req, pay("6.00", nil)); err != nil {
					t.Fatalf("the caller's retry: %v", err)
				}
				t.Logf("the caller's retry: %v", c.Outcome)
			} else {
				if c.Outcome != store.FirstRun {
					t.Errorf("outcome = %v, want first_run: the store must recognise its own commit", c.Outcome)
				}
				if got := logs.find("local commit ambiguous"); len(got) != 1 {
					t.Errorf("ambiguity logs = %q, want one", got)
				}
				wantCalls := map[cutMode]int64{loseAnswer: 1, loseRequest: 2}[tt.mode]
				if calls.Load() != wantCalls {
					t.Errorf("LocalFunc ran %d times, want %d", calls.Load(), wantCalls)
				}
			}
			id, opID := onePayment(t, direct)
			if opID != c.Record.OperationID {
				t.Errorf("payment's operation %v, claim's %v", opID, c.Record.OperationID)
			}
			if diff := cmp.Diff(paymentSnapshot(id), c.Record.Snapshot); diff != "" {
				t.Errorf("snapshot (-want +got):\n%s", diff)
			}
			replay := mustBegin(t, direct, req, store.Replayed)
			if diff := cmp.Diff(paymentSnapshot(id), replay.Record.Snapshot); diff != "" {
				t.Errorf("stored snapshot (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAmbiguousLocalCommitOnTakeover: the same lost COMMIT answer on
// RunLocal's takeover path. Its doc promises the same resolution.
func TestAmbiguousLocalCommitOnTakeover(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	direct, via, p, logs := proxied(t, clock)
	createPayments(t, direct)
	req := request(t, "tenant/alice", "ambiguous-takeover", `{"amount":"6.00"}`)
	mustBegin(t, direct, req, store.FirstRun) // a worker that then died
	clock.Advance(31 * time.Second)

	var calls atomic.Int64
	var w *tripwire
	c, err := via.RunLocal(ctx, req, cutCommitFrom(t, p, loseAnswer, &calls, &w))
	if w == nil || !w.Fired() {
		t.Fatal("the tripwire never cut the COMMIT")
	}
	if err != nil {
		t.Errorf("RunLocal: %v (%T, logs %q): the takeover path must resolve a lost COMMIT answer too", err, err, logs.find(""))
		if c, err = via.RunLocal(ctx, req, pay("6.00", nil)); err != nil {
			t.Fatalf("the caller's retry: %v", err)
		}
		t.Logf("the caller's retry: %v", c.Outcome)
	} else if c.Outcome != store.TakenOver {
		t.Errorf("outcome = %v, want takeover", c.Outcome)
	}
	id, _ := onePayment(t, direct)
	if diff := cmp.Diff(paymentSnapshot(id), c.Record.Snapshot); diff != "" {
		t.Errorf("snapshot (-want +got):\n%s", diff)
	}
}

// TestAmbiguousFinishStillInFlight: the connection dies after the UPDATE
// reached the server but while the server is still waiting for a row lock.
// The store's re-read sees the old version and re-runs the update; then the
// first UPDATE commits. The re-run must not turn the store's own applied
// Finish into ErrLostOwnership.
func TestAmbiguousFinishStillInFlight(t *testing.T) {
	ctx := context.Background()
	direct, via, p, logs := proxied(t, newClock())
	req := request(t, "tenant/alice", "in-flight-finish", `{}`)
	c := mustBegin(t, via, req, store.FirstRun)

	blocker, err := direct.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback(ctx)
	if _, err := blocker.Exec(ctx, `SELECT 1 FROM idempotency_records FOR SHARE`); err != nil {
		t.Fatal(err)
	}
	w, _ := p.cut(t, "finish", cutAfterRequest, true, statement("UPDATE idempotency_records"))
	// pgx cancels an abandoned connection's statement with a CancelRequest,
	// which PostgreSQL treats as best effort; lose it, so the UPDATE stays
	// in flight on the server.
	w.loseCancels.Store(true)
	done := make(chan error, 1)
	go func() { done <- via.Finish(ctx, c.Lease, completed(`{"finished":true}`)) }()
	// The first UPDATE waits on the blocker; the store re-reads, then its
	// re-run waits too.
	if err := waitForLockWaiters(ctx, direct, 2); err != nil {
		t.Fatalf("%v (fired %v, logs %q)", err, w.Fired(), logs.find(""))
	}
	if err := blocker.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	err = <-done
	rec, rerr := direct.Read(ctx, req.Scope)
	if rerr != nil {
		t.Fatal(rerr)
	}
	t.Logf("record %s v%d; Finish: %v; cancel requests lost %d; logs %q", rec.State, rec.Version, err, w.cancels.Load(), logs.find(""))
	if rec.State != idempotency.Completed || rec.LeaseOwner != c.Lease.Owner || rec.Version != 2 {
		t.Fatalf("record %s v%d owner %q: want our own finish applied once", rec.State, rec.Version, rec.LeaseOwner)
	}
	if err != nil {
		t.Errorf("Finish = %v, want nil: the record holds exactly this worker's result", err)
	}
}

// TestUnreachableStoreIsNotAmbiguous: when no connection can be made, no
// statement was sent, so nothing can have committed. The caller must see the
// connection failure, not an ambiguous commit (which tells it to hold the
// operation as possibly done) and not contention.
func TestUnreachableStoreIsNotAmbiguous(t *testing.T) {
	ctx := context.Background()
	direct, via, p, _ := proxied(t, newClock())
	req := request(t, "tenant/alice", "unreachable", `{}`)
	c := mustBegin(t, via, req, store.FirstRun)
	p.proxy.Stop()
	via.Pool().Reset() // drop the pooled connections: every statement needs a new one

	calls := map[string]func(context.Context) error{
		"Begin": func(ctx context.Context) error {
			_, err := via.Begin(ctx, request(t, "tenant/alice", "unreachable-2", `{}`))
			return err
		},
		"Finish": func(ctx context.Context) error { return via.Finish(ctx, c.Lease, completed(`{}`)) },
		"RunLocal": func(ctx context.Context) error {
			_, err := via.RunLocal(ctx, request(t, "tenant/alice", "unreachable-3", `{}`), pay("1", nil))
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			err := call(ctx)
			var connErr *pgconn.ConnectError
			if !errors.As(err, &connErr) {
				t.Errorf("err = %v, want the *pgconn.ConnectError", err)
			}
			var amb *store.AmbiguousCommitError
			if errors.As(err, &amb) {
				t.Errorf("err = %v: a connection that was never made is reported as an ambiguous commit", err)
			}
		})
	}
	if rec, err := direct.Read(ctx, req.Scope); err != nil || rec.State != idempotency.InProgress {
		t.Errorf("record = %s, %v; want untouched IN_PROGRESS", rec.State, err)
	}
}
