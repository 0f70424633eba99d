package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// TestStagesBelongToTheirAttempt: a takeover of a RETRYABLE_FAILURE starts
// a new attempt with no stage, in its lease and in the record, so a later
// takeover of that attempt (if it crashes before recording a stage of its
// own) knows nothing was sent. A takeover of a crashed attempt still sees
// the crashed attempt's stage: that is its recovery point.
func (h suite) TestStagesBelongToTheirAttempt(t *testing.T) {
	ctx := context.Background()
	clock := NewClock()
	s := h.Open(t, clock)
	req := Request(t, "tenant/alice", "stages", `{"amount":"4"}`)

	first := MustBegin(t, s, req, store.FirstRun)
	if err := s.RecordStage(ctx, first.Lease, "sending"); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(ctx, first.Lease, store.Result{State: idempotency.RetryableFailure, ErrorSummary: "upstream 503"}); err != nil {
		t.Fatal(err)
	}
	second := MustBegin(t, s, req, store.TakenOver) // then dies before it records a stage
	if second.Lease.LastStage != "" {
		t.Errorf("takeover of a retryable failure: lease stage %q, want none", second.Lease.LastStage)
	}
	if rec, err := s.Read(ctx, req.Scope); err != nil || rec.LastStage != "" {
		t.Errorf("record after the takeover: stage %q (%v), want none", rec.LastStage, err)
	}

	clock.Advance(31 * time.Second)
	third := MustBegin(t, s, req, store.TakenOver)
	if third.Record.LastStage != "" || third.Lease.LastStage != "" {
		t.Errorf("takeover of the crashed second attempt sees stage %q (lease %q), want none: it never sent",
			third.Record.LastStage, third.Lease.LastStage)
	}
	if err := s.RecordStage(ctx, third.Lease, "sending"); err != nil {
		t.Fatal(err)
	}

	clock.Advance(31 * time.Second)
	fourth := MustBegin(t, s, req, store.TakenOver)
	if fourth.Record.LastStage != "sending" || fourth.Lease.LastStage != "sending" {
		t.Errorf("takeover of the crashed third attempt sees stage %q (lease %q), want its sending",
			fourth.Record.LastStage, fourth.Lease.LastStage)
	}
}
