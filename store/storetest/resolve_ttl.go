package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// TestResolvedAfterTTLStaysForAnotherTTL: TTL is documented as "how
// long the record lives after its last change", but Finish and Resolve leave
// expires_at at claim time + TTL. An OUTCOME_UNKNOWN operation (not
// cleanable) that is resolved as COMPLETED after its TTL is deletable at
// once: the next cleanup pass removes it, and a client that has been told
// 409 "retry with the same key" the whole time now runs the intent again.
func (h suite) TestResolvedAfterTTLStaysForAnotherTTL(t *testing.T) {
	ctx := context.Background()
	clock := NewClock()
	s := h.Open(t, clock)
	req := Request(t, "tenant/alice", "ttl-resolve", `{"amount":"5"}`)
	req.TTL = time.Hour
	c := MustBegin(t, s, req, store.FirstRun)
	if err := s.Finish(ctx, c.Lease, store.Result{State: idempotency.OutcomeUnknown, ErrorSummary: "timeout"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Hour) // the resolve endpoint was down; retries got 409
	u := MustBegin(t, s, req, store.Unresolved)
	if err := s.Resolve(ctx, u.Record, req.Token, Completed(`{"id":"pay_1"}`)); err != nil {
		t.Fatal(err)
	}
	n, err := s.Cleanup(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := s.Begin(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 || c2.Outcome != store.Replayed {
		t.Fatalf("cleanup deleted %d record(s) just resolved; the next retry is %v, want replay of the completed run", n, c2.Outcome)
	}
}
