package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/sqlstore"
)

// setClock moves clock to at.
func setClock(c *clock.Fake, at time.Time) { c.Advance(at.Sub(c.Now())) }

// withState claims req and leaves it in state: PENDING and IN_PROGRESS are
// left claimed, the others are finished with that result.
func withState(t testing.TB, s *sqlstore.Store, req sqlstore.ClaimRequest, state idempotency.State) sqlstore.Record {
	t.Helper()
	ctx := context.Background()
	req.Pending = state == idempotency.Pending
	c := mustBegin(t, s, req, sqlstore.FirstRun)
	if state != idempotency.Pending && state != idempotency.InProgress {
		res := sqlstore.Result{State: state, ErrorSummary: "summary of " + string(state)}
		if state.Terminal() {
			res = completed(`{"state":"` + string(state) + `"}`)
			res.State = state
		}
		if err := s.Finish(ctx, c.Lease, res); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := s.Read(ctx, req.Scope)
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != state {
		t.Fatalf("record is %s, want %s", rec.State, state)
	}
	return rec
}

func cleanup(t testing.TB, s *sqlstore.Store, batch int) int {
	t.Helper()
	n, err := s.Cleanup(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestCleanupExpiryBoundary(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	s, _ := openStore(t, clock)
	req := request(t, "tenant/alice", "boundary", `{}`)
	rec := withState(t, s, req, idempotency.Completed)
	if rec.ExpiresAt.IsZero() || !rec.ExpiresAt.After(clock.Now()) {
		t.Fatalf("expires_at = %v, want after now %v", rec.ExpiresAt, clock.Now())
	}

	setClock(clock, rec.ExpiresAt.Add(-time.Microsecond))
	if n := cleanup(t, s, 0); n != 0 {
		t.Fatalf("1µs before expiry: cleanup deleted %d, want 0", n)
	}
	if _, err := s.Read(ctx, req.Scope); err != nil {
		t.Fatalf("1µs before expiry: %v", err)
	}
	setClock(clock, rec.ExpiresAt)
	if n := cleanup(t, s, 0); n != 1 {
		t.Fatalf("at expiry: cleanup deleted %d, want 1", n)
	}
	if _, err := s.Read(ctx, req.Scope); !errors.Is(err, sqlstore.ErrNotFound) {
		t.Fatalf("at expiry: read = %v, want ErrNotFound", err)
	}
}

func TestCleanupDeletesOnlyRestingStates(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	s, _ := openStore(t, clock)
	tests := []struct {
		state   idempotency.State
		deleted bool
	}{
		{idempotency.Pending, false},
		{idempotency.InProgress, false},
		{idempotency.OutcomeUnknown, false},
		{idempotency.Completed, true},
		{idempotency.TerminalFailure, true},
		{idempotency.RetryableFailure, true},
	}
	scopes := map[idempotency.State]sqlstore.Scope{}
	for _, tt := range tests {
		req := request(t, "tenant/alice", "state-"+string(tt.state), `{}`)
		req.TTL = time.Hour
		withState(t, s, req, tt.state)
		scopes[tt.state] = req.Scope
	}
	clock.Advance(365 * 24 * time.Hour) // far past every expiry and lease
	if n := cleanup(t, s, 0); n != 3 {
		t.Errorf("cleanup deleted %d, want the 3 resting records", n)
	}
	if n := cleanup(t, s, 0); n != 0 {
		t.Errorf("second pass deleted %d, want 0", n)
	}
	for _, tt := range tests {
		_, err := s.Read(ctx, scopes[tt.state])
		if gone := errors.Is(err, sqlstore.ErrNotFound); gone != tt.deleted {
			t.Errorf("%s: deleted = %v (read err %v), want %v", tt.state, gone, err, tt.deleted)
		}
	}
}

func TestCleanupBatches(t *testing.T) {
	clock := newClock()
	s, _ := openStore(t, clock)
	var reqs []sqlstore.ClaimRequest
	for i := range 25 {
		req := request(t, "tenant/alice", fmt.Sprintf("batch-%02d", i), `{}`)
		req.TTL = time.Hour
		withState(t, s, req, idempotency.Completed)
		reqs = append(reqs, req)
		clock.Advance(time.Second) // distinct expiries, in key order
	}
	keep := request(t, "tenant/alice", "long-lived", `{}`)
	keep.TTL = 1000 * time.Hour
	withState(t, s, keep, idempotency.Completed)

	clock.Advance(2 * time.Hour)
	var got []int
	for range 4 {
		got = append(got, cleanup(t, s, 10))
		if len(got) == 1 {
			// Oldest expiry first: the first batch took keys 00..09.
			for i, req := range reqs {
				_, err := s.Read(context.Background(), req.Scope)
				if gone := errors.Is(err, sqlstore.ErrNotFound); gone != (i < 10) {
					t.Errorf("after the first batch, batch-%02d deleted = %v, want %v", i, gone, i < 10)
				}
			}
		}
	}
	if diff := cmp.Diff([]int{10, 10, 5, 0}, got); diff != "" {
		t.Errorf("batch sizes (-want +got):\n%s", diff)
	}
	if _, err := s.Read(context.Background(), keep.Scope); err != nil {
		t.Errorf("unexpired record: %v", err)
	}
}

func TestPurgeKeepsDedupMarker(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t, newClock())
	createPayments(t, s)
	aliceDone := request(t, "tenant/alice", "purge-completed", `{"amount":"1"}`)
	aliceFailed := request(t, "tenant/alice", "purge-terminal", `{"amount":"2"}`)
	aliceBusy := request(t, "tenant/alice", "purge-in-progress", `{"amount":"3"}`)
	bob := request(t, "tenant/bob", "purge-completed", `{"amount":"1"}`)
	doneRec := withState(t, s, aliceDone, idempotency.Completed)
	withState(t, s, aliceFailed, idempotency.TerminalFailure)
	withState(t, s, aliceBusy, idempotency.InProgress)
	withState(t, s, bob, idempotency.Completed)
	bobBefore := rowOf(t, s, "tenant/bob")

	if _, err := s.Purge(ctx, "", "no operator", "tenant/alice"); err == nil {
		t.Fatal("purge without an operator succeeded, want an error")
	}
	if rec, _ := s.Read(ctx, aliceDone.Scope); rec.Purged || len(rec.Snapshot.Body) == 0 {
		t.Fatalf("a refused purge changed the record: purged %v body %q", rec.Purged, rec.Snapshot.Body)
	}

	n, err := s.Purge(ctx, "oncall@example.com", "erasure request 42", "tenant/alice")
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("purged %d records, want 3 (the in-progress one too: it stays purged when it finishes)", n)
	}
	for _, sc := range []sqlstore.Scope{aliceDone.Scope, aliceFailed.Scope, aliceBusy.Scope} {
		rec, err := s.Read(ctx, sc)
		if err != nil {
			t.Fatal(err)
		}
		if !rec.Purged || rec.Snapshot.Body != nil || rec.Snapshot.Header != nil || rec.ErrorSummary != "" {
			t.Errorf("%s: purged %v body %q header %v summary %q, want purged with no body, headers or summary",
				sc.Key, rec.Purged, rec.Snapshot.Body, rec.Snapshot.Header, rec.ErrorSummary)
		}
	}
	if after := rowOf(t, s, "tenant/bob"); after != bobBefore {
		t.Errorf("bob's record changed by alice's purge:\nbefore %s\nafter  %s", bobBefore, after)
	}

	// The marker still dedups: a late retry is replayed, never run again.
	r := mustBegin(t, s, aliceDone, sqlstore.Replayed)
	if !r.Record.Purged || r.Record.OperationID != doneRec.OperationID || r.Record.Fingerprint != doneRec.Fingerprint {
		t.Errorf("replay of a purged key: purged %v op %v fp %v, want the original marker", r.Record.Purged, r.Record.OperationID, r.Record.Fingerprint)
	}
	var calls atomic.Int64
	c, err := s.RunLocal(ctx, aliceDone, pay("1", &calls))
	if err != nil || c.Outcome != sqlstore.Replayed || calls.Load() != 0 {
		t.Errorf("RunLocal retry of a purged key = %v, %v, LocalFunc ran %d times; want replay, not run", c.Outcome, err, calls.Load())
	}
	other := request(t, "tenant/alice", "purge-completed", `{"amount":"999"}`)
	mustBegin(t, s, other, sqlstore.Mismatch)

	log, err := s.AuditLog(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []sqlstore.AuditEntry{{Operator: "oncall@example.com", Action: "purge", Reason: "erasure request 42",
		ActorScope: "tenant/alice", Detail: "records=3"}}
	ignoreID := cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".ID" }, cmp.Ignore())
	if diff := cmp.Diff(want, log, ignoreID); diff != "" {
		t.Errorf("audit log (-want +got):\n%s", diff)
	}
}

// rowOf returns an actor's only record as text, byte for byte.
func rowOf(t *testing.T, s *sqlstore.Store, actor string) string {
	t.Helper()
	var row string
	if err := s.Pool().QueryRow(context.Background(),
		`SELECT r::text FROM idempotency_records r WHERE actor_scope = $1`, actor).Scan(&row); err != nil {
		t.Fatal(err)
	}
	return row
}
