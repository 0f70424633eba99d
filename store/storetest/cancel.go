package storetest

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

func cancelled() store.Result {
	return store.Result{State: idempotency.Cancelled, ErrorSummary: "cancelled", Snapshot: store.Snapshot{
		Status: http.StatusConflict, Body: []byte(`{"type":"operation-cancelled"}`),
		Header: map[string][]string{"Content-Type": {"application/problem+json"}}}}
}

// TestCancelIsAVersionConditionedTerminalWrite: Cancel takes a running
// operation whose stage is reversible (or none) to CANCELLED, drops its
// queued request, and from then on the worker's stage, heartbeat and
// result are refused and a retry replays the cancellation. It refuses a
// record it did not read (a newer version), a terminal one, and one at an
// irreversible stage.
func (h suite) TestCancelIsAVersionConditionedTerminalWrite(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		prepare func(t *testing.T, s store.Backend, l *store.Lease) // before the record is read
		moved   func(t *testing.T, s store.Backend, l *store.Lease) // after it is read
		want    error
	}{
		{name: "pending, no stage"},
		{name: "reversible stage", prepare: func(t *testing.T, s store.Backend, l *store.Lease) {
			if err := s.RecordStage(ctx, l, "reserved;reversible"); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "retryable failure", prepare: func(t *testing.T, s store.Backend, l *store.Lease) {
			if err := s.Finish(ctx, l, store.Result{State: idempotency.RetryableFailure}); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "irreversible stage", want: store.ErrNotCancellable, prepare: func(t *testing.T, s store.Backend, l *store.Lease) {
			if err := s.RecordStage(ctx, l, "captured"); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "completed", want: store.ErrNotCancellable, prepare: func(t *testing.T, s store.Backend, l *store.Lease) {
			if err := s.Finish(ctx, l, Completed(`{}`)); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "moved on since read", want: store.ErrLostOwnership, moved: func(t *testing.T, s store.Backend, l *store.Lease) {
			if err := s.Heartbeat(ctx, l); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "became irreversible since read", want: store.ErrLostOwnership, moved: func(t *testing.T, s store.Backend, l *store.Lease) {
			if err := s.RecordStage(ctx, l, "captured"); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := h.Open(t, NewClock())
			req := Request(t, "tenant/alice", "k", `{"amount":"1"}`)
			req.Pending = true
			c, err := s.Begin(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.SaveRequest(ctx, c.Lease, []byte("queued")); err != nil {
				t.Fatal(err)
			}
			if tt.prepare != nil {
				tt.prepare(t, s, c.Lease)
			}
			rec, err := s.Lookup(ctx, req.Scope.Actor, c.Lease.OperationID)
			if err != nil {
				t.Fatal(err)
			}
			if tt.moved != nil {
				tt.moved(t, s, c.Lease)
			}
			err = s.Cancel(ctx, rec, req.Token, cancelled())
			if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
				t.Fatalf("Cancel: %v, want %v", err, tt.want)
			}
			after, err := s.Lookup(ctx, req.Scope.Actor, c.Lease.OperationID)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want != nil {
				if after.State == idempotency.Cancelled {
					t.Fatalf("record cancelled although Cancel refused")
				}
				return
			}
			if after.State != idempotency.Cancelled || after.Snapshot.Status != http.StatusConflict {
				t.Fatalf("record %s status %d, want CANCELLED 409", after.State, after.Snapshot.Status)
			}
			if n := h.StoredRequests(t, s, rec.Scope.Actor); n != 0 {
				t.Errorf("%d queued requests left", n)
			}
			if err := s.Finish(ctx, c.Lease, Completed(`{}`)); !errors.Is(err, store.ErrLostOwnership) {
				t.Errorf("worker's Finish after the cancel: %v, want ErrLostOwnership", err)
			}
			if err := s.RecordStage(ctx, c.Lease, "captured"); !errors.Is(err, store.ErrLostOwnership) {
				t.Errorf("worker's stage after the cancel: %v, want ErrLostOwnership", err)
			}
			if again, err := s.Begin(ctx, req); err != nil || again.Outcome != store.Replayed ||
				again.Record.State != idempotency.Cancelled {
				t.Errorf("retry: %v %v %v, want the cancellation replayed", again.Outcome, again.Record.State, err)
			}
			if err := s.Cancel(ctx, after, req.Token, cancelled()); !errors.Is(err, store.ErrNotCancellable) {
				t.Errorf("second Cancel: %v, want ErrNotCancellable", err)
			}
		})
	}
}

// TestCancelIsFenced: a cancel from a region whose epoch is stale is
// refused with a StaleEpochError and changes nothing.
func (h suite) TestCancelIsFenced(t *testing.T) {
	ctx := context.Background()
	s := h.Open(t, NewClock())
	req := Request(t, "tenant/alice", "k", `{}`)
	c, err := s.Begin(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := s.Lookup(ctx, req.Scope.Actor, c.Lease.OperationID)
	if err != nil {
		t.Fatal(err)
	}
	h.SetFence(t, s, req.Token.Shard, 2, Region)
	var stale *fencing.StaleEpochError
	if err := s.Cancel(ctx, rec, req.Token, cancelled()); !errors.As(err, &stale) {
		t.Fatalf("Cancel with a stale epoch: %v, want StaleEpochError", err)
	}
	if after, _ := s.Lookup(ctx, req.Scope.Actor, c.Lease.OperationID); after.State == idempotency.Cancelled {
		t.Fatal("cancelled through a stale fence")
	}
}

// TestCleanupDeletesExpiredCancelledRecords: CANCELLED is a resting
// state: once past its TTL, cleanup deletes it like any finished record.
func (h suite) TestCleanupDeletesExpiredCancelledRecords(t *testing.T) {
	ctx := context.Background()
	clock := NewClock()
	s := h.Open(t, clock)
	req := Request(t, "tenant/alice", "k", `{}`)
	c, err := s.Begin(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := s.Lookup(ctx, req.Scope.Actor, c.Lease.OperationID)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Cancel(ctx, rec, req.Token, cancelled()); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Cleanup(ctx, 10); err != nil || n != 0 {
		t.Fatalf("cleanup before the TTL: %d, %v; want 0", n, err)
	}
	clock.Advance(req.TTL + req.Lease + time.Hour)
	if n, err := s.Cleanup(ctx, 10); err != nil || n != 1 {
		t.Fatalf("cleanup after the TTL: %d, %v; want 1", n, err)
	}
}
