package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// TestStrandedAsyncOperationIsTakenOverByOneInstance: a queued operation
// with a stored request is found once its lease expired (never before),
// and of two instances taking it over only one wins, through the same
// fenced, version-conditioned takeover as a retry's. The winner's lease
// runs, so the scan no longer offers it.
func (h suite) TestStrandedAsyncOperationIsTakenOverByOneInstance(t *testing.T) {
	ctx := context.Background()
	clock := NewClock()
	s := h.Open(t, clock)
	other := h.Reopen(t, s, clock)
	req := Request(t, "tenant/alice", "queued", `{"export":"csv"}`)
	req.Pending = true
	c := MustBegin(t, s, req, store.FirstRun)
	if err := s.SaveRequest(ctx, c.Lease, []byte(`{"method":"POST"}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveRequest(ctx, c.Lease, []byte(`{"method":"PUT"}`)); err != nil {
		t.Fatalf("second save: %v", err)
	}
	// Another queued operation whose request was never stored is not offered.
	bare := Request(t, "tenant/alice", "queued-bare", `{}`)
	bare.Pending = true
	MustBegin(t, s, bare, store.FirstRun)

	if got, err := s.Stranded(ctx, anyStranded); err != nil || len(got) != 0 {
		t.Fatalf("before the lease expired: %d stranded (%v), want 0", len(got), err)
	}
	clock.Advance(31 * time.Second)
	got, err := s.Stranded(ctx, anyStranded)
	if err != nil || len(got) != 1 {
		t.Fatalf("after the lease expired: %d stranded (%v), want 1", len(got), err)
	}
	q := got[0]
	if q.Record.OperationID != c.Lease.OperationID || string(q.Request) != `{"method":"POST"}` || q.Record.State != idempotency.Pending {
		t.Fatalf("stranded %v %s %q, want %v PENDING with the first stored request", q.Record.OperationID, q.Record.State, q.Request, c.Lease.OperationID)
	}

	takeReq := store.ClaimRequest{Token: req.Token, Worker: "recovery", Lease: 30 * time.Second, TTL: 24 * time.Hour}
	won, err := other.TakeOver(ctx, q.Record, takeReq)
	if err != nil || won.Outcome != store.TakenOver || won.Lease == nil || won.Record.State != idempotency.Pending {
		t.Fatalf("first TakeOver = %v %+v, want TakenOver of the PENDING record", err, won)
	}
	if _, err := s.TakeOver(ctx, q.Record, takeReq); !errors.Is(err, store.ErrLostOwnership) {
		t.Errorf("second TakeOver = %v, want ErrLostOwnership", err)
	}
	if got, _ := s.Stranded(ctx, anyStranded); len(got) != 0 {
		t.Errorf("after the takeover: %d stranded, want 0 (its lease runs)", len(got))
	}
	if err := other.Finish(ctx, won.Lease, Completed(`{"export":"done"}`)); err != nil {
		t.Fatalf("winner's Finish: %v", err)
	}
	if n := h.StoredRequests(t, s, ""); n != 1 {
		t.Fatalf("stored requests before cleanup: %d, want 1", n)
	}
	Cleanup(t, s, 0)
	if n := h.StoredRequests(t, s, ""); n != 0 {
		t.Errorf("stored requests after cleanup: %d, want 0: the operation finished", n)
	}
}

// TestPurgeDeletesQueuedRequests: a stored async request may carry
// personal data; purging its actor deletes it.
func (h suite) TestPurgeDeletesQueuedRequests(t *testing.T) {
	ctx := context.Background()
	s := h.Open(t, NewClock())
	for _, actor := range []string{"tenant/alice", "tenant/bob"} {
		req := Request(t, actor, "queued", `{}`)
		req.Pending = true
		c := MustBegin(t, s, req, store.FirstRun)
		if err := s.SaveRequest(ctx, c.Lease, []byte(`{"body":"alice's address"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Purge(ctx, "oncall@example.com", "erasure request 9", "tenant/alice"); err != nil {
		t.Fatal(err)
	}
	if n := h.StoredRequests(t, s, "tenant/alice"); n != 0 {
		t.Errorf("alice's stored requests after her purge: %d, want 0", n)
	}
	if n := h.StoredRequests(t, s, "tenant/bob"); n != 1 {
		t.Errorf("bob's stored requests after alice's purge: %d, want 1", n)
	}
}
