package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/sqlstore"
)

// TestAnotherFirstSentIsAMismatchUnlessEitherIsAbsent: the first-sent time
// a claim names is stored with a new record; a later claim of the key
// naming another time is a Mismatch, while one naming the same time, or
// none, is decided as before. A record made without one matches any.
func TestAnotherFirstSentIsAMismatchUnlessEitherIsAbsent(t *testing.T) {
	s, _ := openStore(t, nil)
	t1 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	req := request(t, "tenant/a", "fs-1", `{}`)
	req.FirstSent = t1
	c := mustBegin(t, s, req, sqlstore.FirstRun)
	if !c.Record.FirstSent.Equal(t1) {
		t.Fatalf("stored first-sent %v, want %v", c.Record.FirstSent, t1)
	}
	other := req
	other.FirstSent = t1.Add(time.Second)
	mustBegin(t, s, other, sqlstore.Mismatch)
	mustBegin(t, s, req, sqlstore.InFlight)
	absent := req
	absent.FirstSent = time.Time{}
	mustBegin(t, s, absent, sqlstore.InFlight)

	without := request(t, "tenant/a", "fs-2", `{}`)
	mustBegin(t, s, without, sqlstore.FirstRun)
	with := without
	with.FirstSent = t1
	mustBegin(t, s, with, sqlstore.InFlight)
}

// TestKeepStagesResumesARetryableFailureFromItsLastStage: a takeover of a
// RETRYABLE_FAILURE clears the failed attempt's stages by default, and
// keeps its last one as the recovery point with KeepStages.
func TestKeepStagesResumesARetryableFailureFromItsLastStage(t *testing.T) {
	s, _ := openStore(t, nil)
	ctx := context.Background()
	for _, keep := range []bool{false, true} {
		req := request(t, "tenant/a", "stages-"+map[bool]string{false: "cleared", true: "kept"}[keep], `{}`)
		req.KeepStages = keep
		c := mustBegin(t, s, req, sqlstore.FirstRun)
		if err := s.RecordStage(ctx, c.Lease, "charged"); err != nil {
			t.Fatal(err)
		}
		if err := s.Finish(ctx, c.Lease, sqlstore.Result{State: idempotency.RetryableFailure, ErrorSummary: "503"}); err != nil {
			t.Fatal(err)
		}
		again := mustBegin(t, s, req, sqlstore.TakenOver)
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
