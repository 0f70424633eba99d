package sqlstore_test

import (
	"context"
	"testing"

	"github.com/idemcoord/idemcoord/store"
)

// TestReadFirstPathStillArbitrates drives an endpoint into read-first mode
// with retries, then checks first runs, replays, mismatches and racers
// behave exactly as on the claim-first path.
func TestReadFirstPathStillArbitrates(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t, newClock())
	done := request(t, "tenant/a", "done", `{"n":1}`)
	c, err := s.Begin(ctx, done)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(ctx, c.Lease, completed(`{"ok":true}`)); err != nil {
		t.Fatal(err)
	}
	for range 300 {
		if r, err := s.Begin(ctx, done); err != nil || r.Outcome != store.Replayed {
			t.Fatalf("replay: %v %v", r.Outcome, err)
		}
	}
	if !s.ReadFirst(done.Scope.Endpoint) {
		t.Fatal("300 retries did not move the endpoint to read-first")
	}
	fresh := request(t, "tenant/a", "fresh", `{"n":2}`)
	if r, err := s.Begin(ctx, fresh); err != nil || r.Outcome != store.FirstRun {
		t.Fatalf("new key in read-first mode: %v %v, want first_run", r.Outcome, err)
	}
	if r, err := s.Begin(ctx, fresh); err != nil || r.Outcome != store.InFlight {
		t.Fatalf("second claim: %v %v, want in_progress", r.Outcome, err)
	}
	other := request(t, "tenant/a", "done", `{"n":99}`)
	if r, err := s.Begin(ctx, other); err != nil || r.Outcome != store.Mismatch {
		t.Fatalf("different body: %v %v, want fingerprint_conflict", r.Outcome, err)
	}
	race := request(t, "tenant/a", "race", `{}`)
	outcomes := make([]store.Outcome, 32)
	errs := make(chan error, 32)
	for i := range outcomes {
		go func() {
			c, err := s.Begin(ctx, race)
			outcomes[i] = c.Outcome
			errs <- err
		}()
	}
	for range outcomes {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := tally(outcomes); got["first_run"] != 1 || got["in_progress"] != 31 {
		t.Fatalf("racers: %v", got)
	}
	if n := count(t, s, `SELECT count(*) FROM idempotency_records`); n != 3 {
		t.Fatalf("records = %d, want 3", n)
	}
}
