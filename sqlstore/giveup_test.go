package sqlstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// alwaysConflicting makes every insert into the records fail with a real
// serialization failure (40001), as a hot key under endless contention does.
func alwaysConflicting(t *testing.T, s *sqlstore.Store) {
	t.Helper()
	_, err := s.Pool().Exec(context.Background(), `
		CREATE FUNCTION always_conflict() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'injected conflict' USING ERRCODE = '40001'; END $$;
		CREATE TRIGGER always_conflict BEFORE INSERT ON idempotency_records
		FOR EACH ROW EXECUTE FUNCTION always_conflict();`)
	if err != nil {
		t.Fatal(err)
	}
}

// TestContentionGivesUpAsRetriesExhausted: a claim that keeps losing to
// serialization failures gives up with *RetriesExhaustedError, which
// matches ErrContention (and not ErrUnavailable), so a caller can tell a
// hot key from a dead store. Every backoff between the attempts sleeps on
// the injected backoff clock.
func TestContentionGivesUpAsRetriesExhausted(t *testing.T) {
	const attempts = 4
	backoff := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := sqlstore.Open(context.Background(), sqlstore.Config{Migrate: true, DSN: pgtest.NewDatabase(t), MaxAttempts: attempts,
		RetryBase: time.Second, BackoffClock: backoff, DBClock: newClock()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	bootstrap(t, s)
	alwaysConflicting(t, s)

	done := make(chan error, 1)
	go func() {
		_, err := s.Begin(context.Background(), request(t, "tenant/alice", "hot", `{}`))
		done <- err
	}()
	for n := 1; n < attempts; n++ {
		waiting := make(chan struct{})
		go func() { backoff.BlockUntil(1); close(waiting) }()
		select {
		case err := <-done:
			t.Fatalf("Begin returned (%v) before backoff %d slept on the backoff clock", err, n)
		case <-waiting:
		}
		backoff.Advance(time.Minute) // past any jittered wait
	}
	err = <-done
	var exhausted *store.RetriesExhaustedError
	if !errors.As(err, &exhausted) || exhausted.Attempts != attempts {
		t.Fatalf("Begin = %v (%T), want *RetriesExhaustedError after %d attempts", err, err, attempts)
	}
	var pgErr *pgconn.PgError
	if !errors.Is(err, store.ErrContention) || errors.Is(err, store.ErrUnavailable) || !errors.As(err, &pgErr) || pgErr.Code != "40001" {
		t.Errorf("Begin = %v: want ErrContention, not ErrUnavailable, wrapping the 40001", err)
	}
}

// TestUnreachableStoreIsUnavailable: a store that cannot be reached gives
// up with *UnavailableError (ErrUnavailable), never ErrContention.
func TestUnreachableStoreIsUnavailable(t *testing.T) {
	ctx := context.Background()
	_, via, p, _ := proxied(t, newClock())
	p.proxy.Stop()
	via.Pool().Reset()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := via.Begin(ctx, request(t, "tenant/alice", "down", `{}`))
	var unavailable *store.UnavailableError
	if !errors.As(err, &unavailable) || !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrContention) {
		t.Fatalf("Begin on a dead store = %v (%T), want *UnavailableError matching ErrUnavailable only", err, err)
	}
}
