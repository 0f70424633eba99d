package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// TestAnotherFirstSentIsAMismatchUnlessEitherIsAbsent: the first-sent time
// a claim names is stored with a new record; a later claim of the key
// naming another time is a Mismatch, while one naming the same time, or
// none, is decided as before. A record made without one matches any.
func (h suite) TestAnotherFirstSentIsAMismatchUnlessEitherIsAbsent(t *testing.T) {
	s := h.Open(t, nil)
	t1 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	req := Request(t, "tenant/a", "fs-1", `{}`)
	req.FirstSent = t1
	c := MustBegin(t, s, req, store.FirstRun)
	if !c.Record.FirstSent.Equal(t1) {
		t.Fatalf("stored first-sent %v, want %v", c.Record.FirstSent, t1)
	}
	other := req
	other.FirstSent = t1.Add(time.Second)
	MustBegin(t, s, other, store.Mismatch)
	MustBegin(t, s, req, store.InFlight)
	absent := req
	absent.FirstSent = time.Time{}
	MustBegin(t, s, absent, store.InFlight)

	without := Request(t, "tenant/a", "fs-2", `{}`)
	MustBegin(t, s, without, store.FirstRun)
	with := without
	with.FirstSent = t1
	MustBegin(t, s, with, store.InFlight)
}

// TestKeepStagesResumesARetryableFailureFromItsLastStage: a takeover of a
// RETRYABLE_FAILURE clears the failed attempt's stages by default, and
// keeps its last one as the recovery point with KeepStages.
func (h suite) TestKeepStagesResumesARetryableFailureFromItsLastStage(t *testing.T) {
	s := h.Open(t, nil)
	ctx := context.Background()
	for _, keep := range []bool{false, true} {
		req := Request(t, "tenant/a", "stages-"+map[bool]string{false: "cleared", true: "kept"}[keep], `{}`)
		req.KeepStages = keep
		c := MustBegin(t, s, req, store.FirstRun)
		if err := s.RecordStage(ctx, c.Lease, "charged"); err != nil {
			t.Fatal(err)
		}
		if err := s.Finish(ctx, c.Lease, store.Result{State: idempotency.RetryableFailure, ErrorSummary: "503"}); err != nil {
			t.Fatal(err)
		}
		again := MustBegin(t, s, req, store.TakenOver)
		rec, err := s.Read(ctx, req.Scope)
		if err != nil {
			t.Fatal(err)
		}
		want := ""
		if keep {
			want = "charged"
		}
		if again.Lease.LastStage != want || rec.LastStage != want {
			t.Errorf("KeepStages %v: lease resumes from %q, record holds %q; want %q", keep, again.Lease.LastStage, rec.LastStage, want)
		}
	}
}

// TestAResultsStageIsTheRecoveryPointWhicheverPathRecordsIt: a result
// that reports a stage (store.Result.Stage) records it as the last stage
// in the same write, whether the worker's Finish or a Resolve of an
// OUTCOME_UNKNOWN records it, and a takeover with KeepStages resumes from
// it. A result without one keeps the stage recorded before.
func (h suite) TestAResultsStageIsTheRecoveryPointWhicheverPathRecordsIt(t *testing.T) {
	s := h.Open(t, nil)
	ctx := context.Background()
	failed := func(stage string) store.Result {
		return store.Result{State: idempotency.RetryableFailure, ErrorSummary: "503", Stage: stage}
	}
	tests := []struct {
		name   string
		record func(t *testing.T, req store.ClaimRequest, l *store.Lease)
		want   string
	}{
		{"finish", func(t *testing.T, _ store.ClaimRequest, l *store.Lease) {
			if err := s.Finish(ctx, l, failed("charged")); err != nil {
				t.Fatal(err)
			}
			if l.LastStage != "charged" {
				t.Errorf("lease after the finish holds stage %q, want charged", l.LastStage)
			}
		}, "charged"},
		{"resolve", func(t *testing.T, req store.ClaimRequest, l *store.Lease) {
			if err := s.Finish(ctx, l, store.Result{State: idempotency.OutcomeUnknown, ErrorSummary: "timed out"}); err != nil {
				t.Fatal(err)
			}
			u := MustBegin(t, s, req, store.Unresolved)
			if err := s.Resolve(ctx, u.Record, req.Token, failed("charged")); err != nil {
				t.Fatal(err)
			}
		}, "charged"},
		{"finish without a stage keeps the last one", func(t *testing.T, _ store.ClaimRequest, l *store.Lease) {
			if err := s.RecordStage(ctx, l, "reserved;reversible"); err != nil {
				t.Fatal(err)
			}
			if err := s.Finish(ctx, l, failed("")); err != nil {
				t.Fatal(err)
			}
		}, "reserved;reversible"},
		{"resolve without a stage keeps the last one", func(t *testing.T, req store.ClaimRequest, l *store.Lease) {
			if err := s.RecordStage(ctx, l, "reserved;reversible"); err != nil {
				t.Fatal(err)
			}
			if err := s.Finish(ctx, l, store.Result{State: idempotency.OutcomeUnknown, ErrorSummary: "timed out"}); err != nil {
				t.Fatal(err)
			}
			u := MustBegin(t, s, req, store.Unresolved)
			if err := s.Resolve(ctx, u.Record, req.Token, failed("")); err != nil {
				t.Fatal(err)
			}
		}, "reserved;reversible"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := Request(t, "tenant/a", "result-stage-"+string(rune('a'+i)), `{}`)
			req.KeepStages = true
			c := MustBegin(t, s, req, store.FirstRun)
			tt.record(t, req, c.Lease)
			rec, err := s.Read(ctx, req.Scope)
			if err != nil {
				t.Fatal(err)
			}
			again := MustBegin(t, s, req, store.TakenOver)
			if rec.State != idempotency.RetryableFailure || rec.LastStage != tt.want || again.Lease.LastStage != tt.want {
				t.Errorf("record %s at stage %q, takeover resumes from %q; want RETRYABLE_FAILURE at %q, resumed from it",
					rec.State, rec.LastStage, again.Lease.LastStage, tt.want)
			}
		})
	}
}
