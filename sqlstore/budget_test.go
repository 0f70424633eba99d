package sqlstore_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// recordWrites counts the statements that write idempotency_records (a
// claim's insert, a takeover's or a finish's update): one per attempt.
type recordWrites struct{ n atomic.Int64 }

func (w *recordWrites) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "UPDATE idempotency_records") || strings.Contains(d.SQL, "INSERT INTO idempotency_records") {
		w.n.Add(1)
	}
	return ctx
}

func (w *recordWrites) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// conflictingUpdates makes every update of a record fail with a real
// serialization failure (40001).
func conflictingUpdates(t *testing.T, s *sqlstore.Store) {
	t.Helper()
	_, err := s.Pool().Exec(context.Background(), `
		CREATE FUNCTION always_conflict() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'injected conflict' USING ERRCODE = '40001'; END $$;
		CREATE TRIGGER always_conflict BEFORE UPDATE ON idempotency_records
		FOR EACH ROW EXECUTE FUNCTION always_conflict();`)
	if err != nil {
		t.Fatal(err)
	}
}

// TestOneStoreCallSpendsOneAttemptBudget: the attempts of one store call
// are counted together, whichever loop runs them. A Finish whose every
// attempt fails with 40001 runs at most MaxAttempts updates; a claim that
// takes an expired lease over runs its claim statement and the takeover's
// updates within the same MaxAttempts (before, the takeover's loop had a
// budget of its own inside the claim's rounds). Both give up with the
// typed *RetriesExhaustedError.
func TestOneStoreCallSpendsOneAttemptBudget(t *testing.T) {
	const attempts = 5
	clk := newClock()
	var writes recordWrites
	s, err := sqlstore.Open(context.Background(), sqlstore.Config{Migrate: true, DSN: pgtest.NewDatabase(t), MaxAttempts: attempts,
		RetryBase: time.Microsecond, DBClock: clk, Tracer: &writes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	bootstrap(t, s)
	req := request(t, "tenant/alice", "endless", `{}`)
	c := mustBegin(t, s, req, store.FirstRun)
	conflictingUpdates(t, s)

	for _, tt := range []struct {
		name string
		call func() error
	}{
		{"finish", func() error { return s.Finish(context.Background(), c.Lease, completed(`{}`)) }},
		{"takeover", func() error {
			clk.Advance(time.Hour) // the lease has expired: the claim takes it over
			_, err := s.Begin(context.Background(), req)
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := writes.n.Load()
			err := tt.call()
			n := writes.n.Load() - before
			t.Logf("%s: %d record writes; %v", tt.name, n, err)
			var exhausted *store.RetriesExhaustedError
			if !errors.As(err, &exhausted) || !errors.Is(err, store.ErrContention) {
				t.Fatalf("%s = %v (%T), want *RetriesExhaustedError", tt.name, err, err)
			}
			if n > attempts || exhausted.Attempts > attempts {
				t.Errorf("%s ran %d record writes (error says %d attempts), want at most MaxAttempts %d", tt.name, n, exhausted.Attempts, attempts)
			}
		})
	}
}
