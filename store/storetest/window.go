package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// TestNothingIsTakenOverPastTheDownstreamWindow: with a DownstreamWindow
// of a day, a claim that would take an operation over (a RETRYABLE_FAILURE,
// a crashed worker's expired lease) or hand back its unknown outcome to be
// resolved and re-run does so up to the window's end, measured from the
// record's first claim on the store's clock, and is WindowPassed from
// then on, changing nothing; a queue TakeOver of stranded work fails with
// ErrDownstreamWindowPassed. A finished operation still replays, and a
// claim without a window is unaffected.
func (h suite) TestNothingIsTakenOverPastTheDownstreamWindow(t *testing.T) {
	ctx := context.Background()
	clock := NewClock()
	s := h.Open(t, clock)
	const window = 24 * time.Hour
	windowed := func(req store.ClaimRequest) store.ClaimRequest {
		req.DownstreamWindow, req.TTL = window, 72*time.Hour
		return req
	}
	retryable := windowed(Request(t, "tenant/alice", "window-retryable", `{"amount":"1"}`))
	WithState(t, s, retryable, idempotency.RetryableFailure)
	crashed := windowed(Request(t, "tenant/alice", "window-crashed", `{"amount":"2"}`))
	WithState(t, s, crashed, idempotency.InProgress)
	unknown := windowed(Request(t, "tenant/alice", "window-unknown", `{"amount":"3"}`))
	WithState(t, s, unknown, idempotency.OutcomeUnknown)
	done := windowed(Request(t, "tenant/alice", "window-done", `{"amount":"4"}`))
	WithState(t, s, done, idempotency.Completed)
	queued := windowed(Request(t, "tenant/alice", "window-queued", `{"export":"csv"}`))
	queued.Pending = true
	qc := MustBegin(t, s, queued, store.FirstRun)
	if err := s.SaveRequest(ctx, qc.Lease, []byte(`{"method":"POST"}`)); err != nil {
		t.Fatal(err)
	}

	// 1µs before the window ends the guard is quiet.
	clock.Advance(window - time.Microsecond)
	MustBegin(t, s, unknown, store.Unresolved)
	before := h.Raw(t, s, "")

	clock.Advance(time.Microsecond) // exactly a day after the first claims
	for _, tc := range []struct {
		name  string
		req   store.ClaimRequest
		state idempotency.State
	}{
		{"retryable failure", retryable, idempotency.RetryableFailure},
		{"crashed worker", crashed, idempotency.InProgress},
		{"unknown outcome", unknown, idempotency.OutcomeUnknown},
	} {
		c := MustBegin(t, s, tc.req, store.WindowPassed)
		if c.Lease != nil || c.Record.State != tc.state {
			t.Errorf("%s: lease %+v, record %s; want no lease, the record as it was (%s)", tc.name, c.Lease, c.Record.State, tc.state)
		}
	}
	if c := MustBegin(t, s, done, store.Replayed); c.Record.Snapshot.Status != 201 {
		t.Errorf("finished operation past the window: snapshot %+v, want its answer replayed", c.Record.Snapshot)
	}
	stranded, err := s.Stranded(ctx, anyStranded)
	if err != nil || len(stranded) != 1 {
		t.Fatalf("stranded: %d (%v), want the queued operation", len(stranded), err)
	}
	takeReq := store.ClaimRequest{Token: queued.Token, Worker: "recovery", Lease: 30 * time.Second, TTL: 72 * time.Hour,
		DownstreamWindow: window}
	if _, err := s.TakeOver(ctx, stranded[0].Record, takeReq); !errors.Is(err, store.ErrDownstreamWindowPassed) {
		t.Errorf("recovery TakeOver past the window: %v, want ErrDownstreamWindowPassed", err)
	}
	if after := h.Raw(t, s, ""); after != before {
		t.Errorf("refusals past the window changed records:\nbefore %s\nafter  %s", before, after)
	}

	// Without a window the same claim takes over, as it always did.
	retryable.DownstreamWindow = 0
	MustBegin(t, s, retryable, store.TakenOver)
}

// TestReconcilePastWindowSettlesOnlyWhatTheGuardLeaves holds
// ReconcilePastWindow to its doc: within the window, or while a lease
// runs, or for a state it does not settle, it changes nothing
// (ErrNotPastWindow); past the window a RETRYABLE_FAILURE becomes
// COMPLETED, whose retry replays, and an expired IN_PROGRESS becomes
// RETRYABLE_FAILURE, each with a reconcile audit row; an operator and a
// reason are required.
func (h suite) TestReconcilePastWindowSettlesOnlyWhatTheGuardLeaves(t *testing.T) {
	ctx := context.Background()
	clock := NewClock()
	s := h.Open(t, clock)
	const window = 24 * time.Hour
	windowed := func(key string) store.ClaimRequest {
		req := Request(t, "tenant/alice", key, `{"amount":"1"}`)
		req.DownstreamWindow, req.TTL = window, 72*time.Hour
		return req
	}
	retryable := windowed("reconcile-retryable")
	failed := WithState(t, s, retryable, idempotency.RetryableFailure)
	crashed := windowed("reconcile-crashed")
	stranded := WithState(t, s, crashed, idempotency.InProgress)
	done := windowed("reconcile-done")
	completed := WithState(t, s, done, idempotency.Completed)
	ran := Completed(`{"reconciled":true}`)
	notRun := store.Result{State: idempotency.RetryableFailure, ErrorSummary: "reconciled: not run"}
	reconcile := func(rec store.Record, res store.Result) error {
		return s.ReconcilePastWindow(ctx, "oncall", "INC-5", rec.OperationID, window, res)
	}

	clock.Advance(window - time.Second) // within the window
	if err := reconcile(failed, ran); !errors.Is(err, store.ErrNotPastWindow) {
		t.Errorf("within the window: %v, want ErrNotPastWindow", err)
	}
	clock.Advance(time.Second)
	before := h.Raw(t, s, "")
	for _, tc := range []struct {
		name string
		rec  store.Record
		res  store.Result
	}{
		{"a completed operation", completed, ran},
		{"not-run of a retryable failure", failed, notRun},
	} {
		if err := reconcile(tc.rec, tc.res); !errors.Is(err, store.ErrNotPastWindow) {
			t.Errorf("%s: %v, want ErrNotPastWindow", tc.name, err)
		}
	}
	if err := s.ReconcilePastWindow(ctx, "", "INC-5", failed.OperationID, window, ran); !errors.Is(err, store.ErrNoOperator) {
		t.Errorf("without an operator: %v, want ErrNoOperator", err)
	}
	if after := h.Raw(t, s, ""); after != before {
		t.Errorf("the refusals changed records:\nbefore %s\nafter  %s", before, after)
	}

	if err := reconcile(failed, ran); err != nil {
		t.Fatalf("past the window, a retryable failure --ran: %v", err)
	}
	if c := MustBegin(t, s, retryable, store.Replayed); c.Record.State != idempotency.Completed {
		t.Errorf("its retry: %s, want the reconciled COMPLETED replayed", c.Record.State)
	}
	if err := reconcile(stranded, notRun); err != nil {
		t.Fatalf("past the window, an expired IN_PROGRESS --not-run: %v", err)
	}
	if rec, err := s.Read(ctx, crashed.Scope); err != nil || rec.State != idempotency.RetryableFailure {
		t.Errorf("the stranded operation after --not-run: %s (%v), want RETRYABLE_FAILURE", rec.State, err)
	}
	rows, err := s.QueryAudit(ctx, store.AuditFilter{Action: "reconcile"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Errorf("%d reconcile audit rows, want 2: %+v", len(rows), rows)
	}
}
