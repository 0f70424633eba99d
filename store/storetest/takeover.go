package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

func (h suite) TestTakeoverAfterLeaseExpiry(t *testing.T) {
	ctx := context.Background()
	clock := NewClock()
	s := h.Open(t, clock)
	other := h.Reopen(t, s, clock) // another worker, its own pool
	req := Request(t, "tenant/alice", "takeover", `{"amount":"7"}`)

	old := MustBegin(t, s, req, store.FirstRun)
	if err := s.RecordStage(ctx, old.Lease, "charge_sent"); err != nil {
		t.Fatal(err)
	}

	// Before expiry: in flight, retry when the lease runs out.
	clock.Advance(10 * time.Second)
	busy := MustBegin(t, other, req, store.InFlight)
	if busy.RetryAfter != 20*time.Second {
		t.Errorf("retry after = %v, want the remaining lease 20s", busy.RetryAfter)
	}
	clock.Advance(20*time.Second - time.Microsecond)
	if busy := MustBegin(t, other, req, store.InFlight); busy.RetryAfter != time.Microsecond {
		t.Errorf("1µs before expiry: retry after = %v, want 1µs", busy.RetryAfter)
	}

	clock.Advance(time.Second + time.Microsecond) // 31s after the claim
	taken := MustBegin(t, other, req, store.TakenOver)
	nl := taken.Lease
	if nl == nil || nl.Version <= old.Lease.Version {
		t.Fatalf("takeover lease %+v, want a version above %d", nl, old.Lease.Version)
	}
	if nl.OperationID != old.Record.OperationID {
		t.Errorf("operation id changed on takeover: %v -> %v", old.Record.OperationID, nl.OperationID)
	}
	if nl.LastStage != "charge_sent" {
		t.Errorf("takeover LastStage = %q, want the prior charge_sent", nl.LastStage)
	}
	if want := clock.Now().Add(30 * time.Second); !nl.ExpiresAt.Equal(want) {
		t.Errorf("takeover lease expires %v, want %v", nl.ExpiresAt, want)
	}

	// The old worker is fenced out by the version, and changes nothing.
	before := h.Raw(t, s, "")
	if err := s.Finish(ctx, old.Lease, Completed(`{"by":"old"}`)); !errors.Is(err, store.ErrLostOwnership) {
		t.Errorf("old worker's Finish: %v, want ErrLostOwnership", err)
	}
	if err := s.Heartbeat(ctx, old.Lease); !errors.Is(err, store.ErrLostOwnership) {
		t.Errorf("old worker's Heartbeat: %v, want ErrLostOwnership", err)
	}
	if err := s.RecordStage(ctx, old.Lease, "charge_done"); !errors.Is(err, store.ErrLostOwnership) {
		t.Errorf("old worker's RecordStage: %v, want ErrLostOwnership", err)
	}
	if after := h.Raw(t, s, ""); after != before {
		t.Fatalf("old worker changed the record:\nbefore %s\nafter  %s", before, after)
	}

	if err := other.Heartbeat(ctx, nl); err != nil {
		t.Fatalf("new owner's heartbeat: %v", err)
	}
	if err := other.Finish(ctx, nl, Completed(`{"by":"new"}`)); err != nil {
		t.Fatalf("new owner's Finish: %v", err)
	}
	replay := MustBegin(t, s, req, store.Replayed)
	if diff := cmp.Diff(Completed(`{"by":"new"}`).Snapshot, replay.Record.Snapshot); diff != "" {
		t.Errorf("replay (-want +got):\n%s", diff)
	}
	if replay.Record.Attempts != 2 || replay.Record.OperationID != old.Record.OperationID {
		t.Errorf("record attempts %d op %v, want 2 attempts of %v", replay.Record.Attempts, replay.Record.OperationID, old.Record.OperationID)
	}
}

func (h suite) TestLeaseExpiresExactlyAtExpiry(t *testing.T) {
	clock := NewClock()
	s := h.Open(t, clock)
	req := Request(t, "tenant/alice", "boundary", `{}`)
	MustBegin(t, s, req, store.FirstRun)
	clock.Advance(30 * time.Second) // now == lease_expires_at
	MustBegin(t, s, req, store.TakenOver)
}

func (h suite) TestRetryableFailureIsRerun(t *testing.T) {
	ctx := context.Background()
	s := h.Open(t, NewClock())
	req := Request(t, "tenant/alice", "retryable", `{"amount":"1"}`)
	first := MustBegin(t, s, req, store.FirstRun)
	if err := s.Finish(ctx, first.Lease, store.Result{State: idempotency.RetryableFailure, ErrorSummary: "upstream 503"}); err != nil {
		t.Fatal(err)
	}
	// No clock movement: a retryable failure is re-run at once.
	again := MustBegin(t, s, req, store.TakenOver)
	if again.Lease.OperationID != first.Record.OperationID || again.Lease.Version <= first.Lease.Version {
		t.Errorf("re-run lease %+v, want operation %v above version %d", again.Lease, first.Record.OperationID, first.Lease.Version)
	}
	if err := s.Finish(ctx, first.Lease, Completed(`{}`)); !errors.Is(err, store.ErrLostOwnership) {
		t.Errorf("first attempt's late Finish: %v, want ErrLostOwnership", err)
	}
	if err := s.Finish(ctx, again.Lease, Completed(`{"ok":true}`)); err != nil {
		t.Fatal(err)
	}
	MustBegin(t, s, req, store.Replayed)
}

func (h suite) TestOutcomeUnknownIsNeverRerun(t *testing.T) {
	clock := NewClock()
	s := h.Open(t, clock)
	req, rec := unknownRecord(t, s, "unknown")
	if rec.State != idempotency.OutcomeUnknown {
		t.Fatalf("state = %s", rec.State)
	}
	for _, d := range []time.Duration{31 * time.Second, time.Hour, 30 * 24 * time.Hour} {
		clock.Advance(d)
		MustBegin(t, s, req, store.Unresolved)
	}
}

func (h suite) TestResolveOutcomeUnknown(t *testing.T) {
	ctx := context.Background()
	s := h.Open(t, NewClock())

	t.Run("completed is replayed", func(t *testing.T) {
		req, rec := unknownRecord(t, s, "resolve-completed")
		if err := s.Resolve(ctx, rec, req.Token, Completed(`{"found":"downstream"}`)); err != nil {
			t.Fatal(err)
		}
		r := MustBegin(t, s, req, store.Replayed)
		if diff := cmp.Diff(Completed(`{"found":"downstream"}`).Snapshot, r.Record.Snapshot); diff != "" {
			t.Errorf("replay (-want +got):\n%s", diff)
		}
		if err := s.Resolve(ctx, r.Record, req.Token, Completed(`{}`)); !errors.Is(err, store.ErrNotUnknown) {
			t.Errorf("resolving a completed record: %v, want ErrNotUnknown", err)
		}
		if err := s.Resolve(ctx, rec, req.Token, Completed(`{}`)); !errors.Is(err, store.ErrLostOwnership) {
			t.Errorf("resolving again from the stale read: %v, want ErrLostOwnership", err)
		}
	})

	t.Run("retryable failure is re-run", func(t *testing.T) {
		req, rec := unknownRecord(t, s, "resolve-retry")
		if err := s.Resolve(ctx, rec, req.Token, store.Result{State: idempotency.RetryableFailure, ErrorSummary: "downstream has no such charge"}); err != nil {
			t.Fatal(err)
		}
		c := MustBegin(t, s, req, store.TakenOver)
		if c.Lease.OperationID != rec.OperationID {
			t.Errorf("re-run of operation %v, want %v", c.Lease.OperationID, rec.OperationID)
		}
		if err := s.Finish(ctx, c.Lease, Completed(`{}`)); err != nil {
			t.Fatal(err)
		}
		MustBegin(t, s, req, store.Replayed)
	})

	t.Run("two resolvers, one wins", func(t *testing.T) {
		for round := range 10 {
			req, rec := unknownRecord(t, s, fmt.Sprintf("resolve-race-%d", round))
			errs := make([]error, 2)
			results := []store.Result{Completed(`{"resolver":0}`), Completed(`{"resolver":1}`)}
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range 2 {
				wg.Go(func() {
					<-start
					errs[i] = s.Resolve(ctx, rec, req.Token, results[i])
				})
			}
			close(start)
			wg.Wait()
			winner := -1
			for i, err := range errs {
				switch {
				case err == nil:
					if winner >= 0 {
						t.Fatalf("round %d: both resolvers succeeded", round)
					}
					winner = i
				case !errors.Is(err, store.ErrLostOwnership):
					t.Fatalf("round %d: resolver %d: %v, want nil or ErrLostOwnership", round, i, err)
				}
			}
			if winner < 0 {
				t.Fatalf("round %d: no resolver succeeded: %v", round, errs)
			}
			r := MustBegin(t, s, req, store.Replayed)
			if diff := cmp.Diff(results[winner].Snapshot, r.Record.Snapshot); diff != "" {
				t.Errorf("round %d: stored answer is not the winner's (-want +got):\n%s", round, diff)
			}
		}
	})
}

// TestReconcileUnknownIsAudited holds ReconcileUnknown to its doc: "It is
// audited in the same transaction as the change." A repair whose audit row
// cannot be written (no operator) must not change the record.
func (h suite) TestReconcileUnknownIsAudited(t *testing.T) {
	ctx := context.Background()
	s := h.Open(t, NewClock())

	req, rec := unknownRecord(t, s, "reconcile")
	if err := s.ReconcileUnknown(ctx, "oncall@example.com", "INC-1: charge found at the PSP", rec.OperationID, Completed(`{"reconciled":true}`)); err != nil {
		t.Fatal(err)
	}
	MustBegin(t, s, req, store.Replayed)
	log, err := s.AuditLog(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 1 || log[0].Action != "reconcile" || log[0].OperationID == nil || *log[0].OperationID != rec.OperationID {
		t.Fatalf("audit log = %+v, want one reconcile entry for %v", log, rec.OperationID)
	}

	req, rec = unknownRecord(t, s, "reconcile-unaudited")
	if err := s.ReconcileUnknown(ctx, "", "no operator named", rec.OperationID, Completed(`{}`)); err == nil {
		t.Fatal("ReconcileUnknown without an operator succeeded, want an error")
	}
	if log, _ := s.AuditLog(ctx, 10); len(log) != 1 {
		t.Errorf("audit log has %d entries, want still 1", len(log))
	}
	after, err := s.Read(ctx, req.Scope)
	if err != nil {
		t.Fatal(err)
	}
	if after.State != idempotency.OutcomeUnknown {
		t.Errorf("record is %s after a refused, unaudited repair; want OUTCOME_UNKNOWN: Resolve committed before the audit failed", after.State)
	}
}

// TestReleaseRecordsNotSentThroughALeaseThatIsBehind: Release gives up a
// run that sent nothing: RETRYABLE_FAILURE with its summary, and the next
// claim takes it over at once without the released attempt's stages (no
// "sending" mark says it may have been sent). It releases also through a
// lease handle that is behind the lease's own last write (a mark whose
// answer was lost), and never a record that moved on: a takeover's or a
// cancel's stands (ErrLostOwnership).
func (h suite) TestReleaseRecordsNotSentThroughALeaseThatIsBehind(t *testing.T) {
	ctx := context.Background()
	t.Run("behind its own mark", func(t *testing.T) {
		s := h.Open(t, NewClock())
		req := Request(t, "tenant/alice", "release-behind", `{}`)
		c := MustBegin(t, s, req, store.FirstRun)
		behind := *c.Lease
		if err := s.RecordStage(ctx, c.Lease, "sending"); err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, &behind, "not sent: test"); err != nil {
			t.Fatalf("Release: %v", err)
		}
		rec, err := s.Read(ctx, req.Scope)
		if err != nil || rec.State != idempotency.RetryableFailure || rec.ErrorSummary != "not sent: test" {
			t.Fatalf("record %s %q (%v), want RETRYABLE_FAILURE \"not sent: test\"", rec.State, rec.ErrorSummary, err)
		}
		again := MustBegin(t, s, req, store.TakenOver)
		if again.Lease.LastStage != "" || again.Lease.OperationID != c.Lease.OperationID {
			t.Errorf("takeover of the released claim resumes from %q (operation %v), want no stage, the same operation",
				again.Lease.LastStage, again.Lease.OperationID)
		}
	})
	t.Run("taken over", func(t *testing.T) {
		clock := NewClock()
		s := h.Open(t, clock)
		req := Request(t, "tenant/alice", "release-taken", `{}`)
		c := MustBegin(t, s, req, store.FirstRun)
		clock.Advance(req.Lease + time.Second)
		other := MustBegin(t, s, req, store.TakenOver)
		if err := s.Release(ctx, c.Lease, "not sent: test"); !errors.Is(err, store.ErrLostOwnership) {
			t.Errorf("Release of a lease taken over: %v, want ErrLostOwnership", err)
		}
		rec, err := s.Read(ctx, req.Scope)
		if err != nil || rec.State != idempotency.InProgress || rec.Version != other.Lease.Version {
			t.Errorf("record %s v%d (%v), want the takeover's untouched (v%d)", rec.State, rec.Version, err, other.Lease.Version)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		s := h.Open(t, NewClock())
		req := Request(t, "tenant/alice", "release-cancelled", `{}`)
		req.Pending = true
		c := MustBegin(t, s, req, store.FirstRun)
		rec, err := s.Read(ctx, req.Scope)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Cancel(ctx, rec, req.Token, cancelled()); err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, c.Lease, "not sent: test"); !errors.Is(err, store.ErrLostOwnership) {
			t.Errorf("Release of a cancelled operation: %v, want ErrLostOwnership", err)
		}
		if got, err := s.Read(ctx, req.Scope); err != nil || got.State != idempotency.Cancelled {
			t.Errorf("record %s (%v), want CANCELLED", got.State, err)
		}
	})
}
