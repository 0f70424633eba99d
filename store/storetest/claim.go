package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

func (h suite) TestBeginFirstRunThenReplay(t *testing.T) {
	ctx := context.Background()
	s := h.Open(t, NewClock())
	req := Request(t, "tenant/alice", "k1", `{"amount":"12.50"}`)
	c, err := s.Begin(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if c.Outcome != store.FirstRun || c.Lease == nil || c.Lease.Version != 1 {
		t.Fatalf("first claim = %v lease %+v, want first_run at version 1", c.Outcome, c.Lease)
	}
	if err := s.Finish(ctx, c.Lease, Completed(`{"payment_id":"pay_1"}`)); err != nil {
		t.Fatal(err)
	}
	again, err := s.Begin(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if again.Outcome != store.Replayed {
		t.Fatalf("second claim = %v, want replay", again.Outcome)
	}
	if again.Record.OperationID != c.Record.OperationID {
		t.Errorf("operation id changed: %v -> %v", c.Record.OperationID, again.Record.OperationID)
	}
	if diff := cmp.Diff(Completed(`{"payment_id":"pay_1"}`).Snapshot, again.Record.Snapshot); diff != "" {
		t.Errorf("replayed snapshot (-want +got):\n%s", diff)
	}
}

func (h suite) TestConcurrentClaimsOneWinner(t *testing.T) {
	ctx := context.Background()
	s := h.Open(t, NewClock())
	req := Request(t, "tenant/alice", "race", `{"amount":"1"}`)
	const n = 64
	outcomes := make([]store.Outcome, n)
	leases := make([]*store.Lease, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c, err := s.Begin(ctx, req)
			if err != nil {
				t.Errorf("racer %d: %v", i, err)
				return
			}
			outcomes[i], leases[i] = c.Outcome, c.Lease
		})
	}
	wg.Wait()
	got := Tally(outcomes)
	if got["first_run"] != 1 || got["in_progress"] != n-1 {
		t.Fatalf("outcomes = %v, want 1 first_run and %d in_progress", got, n-1)
	}
	var winner *store.Lease
	for _, l := range leases {
		if l != nil {
			winner = l
		}
	}
	if err := s.Finish(ctx, winner, Completed(`{}`)); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		wg.Go(func() {
			c, err := s.Begin(ctx, req)
			if err != nil {
				t.Errorf("racer %d: %v", i, err)
				return
			}
			outcomes[i] = c.Outcome
		})
	}
	wg.Wait()
	if got := Tally(outcomes); got["replay"] != n {
		t.Fatalf("after completion outcomes = %v, want %d replays", got, n)
	}
	if got := records(t, s); got != 1 {
		t.Fatalf("records = %d, want 1", got)
	}
}

func (h suite) TestFingerprintMismatchLeavesRecordUnchanged(t *testing.T) {
	ctx := context.Background()
	s := h.Open(t, NewClock())
	req := Request(t, "tenant/alice", "k", `{"amount":"12.50"}`)
	c, err := s.Begin(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(ctx, c.Lease, Completed(`{"payment_id":"pay_1"}`)); err != nil {
		t.Fatal(err)
	}
	before := h.Raw(t, s, "")
	other := Request(t, "tenant/alice", "k", `{"amount":"99.00"}`)
	m, err := s.Begin(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	if m.Outcome != store.Mismatch {
		t.Fatalf("outcome = %v, want fingerprint_conflict", m.Outcome)
	}
	if after := h.Raw(t, s, ""); after != before {
		t.Fatalf("record changed by a mismatching request:\nbefore %s\nafter  %s", before, after)
	}
	// Number forms are the same request: 12.50 == 12.5 == 1.25e1.
	same := Request(t, "tenant/alice", "k", `{"amount":"12.50"}`)
	if r, err := s.Begin(ctx, same); err != nil || r.Outcome != store.Replayed {
		t.Fatalf("same body: outcome %v err %v, want replay", r.Outcome, err)
	}
}

func (h suite) TestScopesAreIndependent(t *testing.T) {
	ctx := context.Background()
	s := h.Open(t, NewClock())
	a := Request(t, "tenant/alice", "shared-key", `{"amount":"1"}`)
	ca, err := s.Begin(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(ctx, ca.Lease, Completed(`{"owner":"alice"}`)); err != nil {
		t.Fatal(err)
	}
	b := Request(t, "tenant/bob", "shared-key", `{"amount":"1"}`)
	cb, err := s.Begin(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if cb.Outcome != store.FirstRun || cb.Record.OperationID == ca.Record.OperationID {
		t.Fatalf("bob's claim = %v op %v, want an independent first run", cb.Outcome, cb.Record.OperationID)
	}
	e := a
	e.Scope.Endpoint = "POST /v1/refunds"
	if ce, err := s.Begin(ctx, e); err != nil || ce.Outcome != store.FirstRun {
		t.Fatalf("other endpoint: %v %v, want first run", ce.Outcome, err)
	}
	if _, err := s.Lookup(ctx, "tenant/bob", ca.Record.OperationID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("bob looking up alice's operation: err = %v, want ErrNotFound", err)
	}
	rec, err := s.Lookup(ctx, "tenant/alice", ca.Record.OperationID)
	if err != nil || string(rec.Snapshot.Body) != `{"owner":"alice"}` {
		t.Fatalf("alice's lookup = %q, %v", rec.Snapshot.Body, err)
	}
}

func (h suite) TestStaleEpochRefused(t *testing.T) {
	ctx := context.Background()
	s := h.Open(t, NewClock())
	req := Request(t, "tenant/alice", "k", `{}`)
	c, err := s.Begin(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	h.SetFence(t, s, req.Token.Shard, 2, Region)
	var stale *fencing.StaleEpochError
	if err := s.Finish(ctx, c.Lease, Completed(`{}`)); !errors.As(err, &stale) || stale.Current != 2 {
		t.Fatalf("finish with epoch 1 after bump: %v, want StaleEpochError current 2", err)
	}
	req2 := Request(t, "tenant/alice", "k2", `{}`)
	if _, err := s.Begin(ctx, req2); !errors.Is(err, fencing.ErrStaleEpoch) {
		t.Fatalf("claim with epoch 1 after bump: %v, want ErrStaleEpoch", err)
	}
	req2.Token.Epoch = 2
	if c, err := s.Begin(ctx, req2); err != nil || c.Outcome != store.FirstRun {
		t.Fatalf("claim with the new epoch: %v %v", c.Outcome, err)
	}
	if rec, err := s.Read(ctx, req2.Scope); err != nil || rec.State != idempotency.InProgress || records(t, s) != 2 {
		t.Fatalf("record for k2 = %s, %v; %d records, want k2's one beside k's", rec.State, err, records(t, s))
	}
}
