package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/internal/retry"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// finishCounter counts the finish statements (the UPDATE that stores a
// result) the store sends: one per attempt, whatever loop runs it.
type finishCounter struct{ n atomic.Int64 }

func (f *finishCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "UPDATE idempotency_records") && strings.Contains(d.SQL, "response_body") {
		f.n.Add(1)
	}
	return ctx
}

func (f *finishCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// finishErrors is the real store, remembering what every Finish returned.
type finishErrors struct {
	*sqlstore.Store
	mu   sync.Mutex
	errs []error
}

func (f *finishErrors) Finish(ctx context.Context, l *store.Lease, res store.Result) error {
	err := f.Store.Finish(ctx, l, res)
	f.mu.Lock()
	f.errs = append(f.errs, err)
	f.mu.Unlock()
	return err
}

// TestOneResultSpendsOneRetryBudgetAgainstEndlessConflicts: every attempt
// to record a result fails with a real serialization failure (a trigger
// raises 40001 on every finish, as a record under endless contention
// would). The store's own retries and the gateway's re-recording in the
// background share one budget: the whole effort runs at most
// retry.Default.Record.Attempts finish statements, and ends with the typed
// *sqlstore.RetriesExhaustedError (ErrContention). Before, the budgets
// multiplied: 30 attempts per Finish, times every re-record the gateway
// fitted into its 30 s.
func TestOneResultSpendsOneRetryBudgetAgainstEndlessConflicts(t *testing.T) {
	fake := clock.NewFake(time.Now())
	var finishes finishCounter
	s, err := sqlstore.Open(context.Background(), sqlstore.Config{Migrate: true, DSN: pgtest.NewDatabase(t), MaxConns: 8,
		DBClock: fake, Tracer: &finishes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	bootstrap(t, s)
	// The upstream runs the intent, and from then on no finish commits.
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := s.Pool().Exec(r.Context(), `
			CREATE FUNCTION always_conflict() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN RAISE EXCEPTION 'injected conflict' USING ERRCODE = '40001'; END $$;
			CREATE TRIGGER always_conflict BEFORE UPDATE ON idempotency_records
			FOR EACH ROW WHEN (NEW.response_status IS NOT NULL) EXECUTE FUNCTION always_conflict();`); err != nil {
			t.Error(err)
		}
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	fs := &finishErrors{Store: s}
	g, srv := serveGateway(t, "w", fs, fake, u, "")

	start, fakeStart := time.Now(), fake.Now()
	if st, hd, b := do(t, post(t, srv.URL+"/v1/things", token(t, "alice"), "endless-1", `{}`)); st != http.StatusCreated {
		t.Fatalf("first run: %s, want the upstream's 201", describe(st, hd, b))
	}
	closed := make(chan struct{})
	go func() { g.Close(); close(closed) }() // waits for the re-recording
	advanceUntil(fake, time.Second, closed)

	fs.mu.Lock()
	calls, last := len(fs.errs), fs.errs[len(fs.errs)-1]
	fs.mu.Unlock()
	n := finishes.n.Load()
	t.Logf("one result: %d finish statements in %d Finish calls; %v of store time, %v of the gateway's waits; last error: %v",
		n, calls, time.Since(start).Round(time.Millisecond), fake.Now().Sub(fakeStart), last)
	if budget := int64(retry.Default.Record.Attempts); n > budget {
		t.Errorf("%d finish statements for one result, want at most the named budget %d", n, budget)
	}
	var exhausted *store.RetriesExhaustedError
	if !errors.As(last, &exhausted) || !errors.Is(last, store.ErrContention) {
		t.Errorf("last Finish = %v (%T), want *sqlstore.RetriesExhaustedError", last, last)
	}
}
