package storetest

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

var lossModes = []struct {
	name string
	loss Loss
}{
	{"answer lost (server to client)", LoseAnswer},
	{"request lost (client to server)", LoseRequest},
}

// TestAmbiguousClaim: a claim whose commit's answer (or request) is lost
// with its connection is settled inside Begin: the caller gets the one
// FirstRun, with a lease it can finish under, and one record exists.
func (h suite) TestAmbiguousClaim(t *testing.T) {
	for _, tt := range lossModes {
		t.Run(tt.name, func(t *testing.T) {
			clock := NewClock()
			direct := h.Open(t, clock)
			via, cut, ambiguities := h.Faulty(t, direct, clock)
			req := Request(t, "tenant/alice", "ambiguous-claim", `{}`)
			fired, remove := cut(t, OpClaim, tt.loss)
			c, err := via.Begin(context.Background(), req)
			remove()
			if !fired() {
				t.Fatal("the tripwire never cut the claim")
			}
			if err != nil {
				t.Fatalf("Begin: %v", err)
			}
			if c.Outcome != store.FirstRun || c.Lease == nil || c.Lease.Version != 1 {
				t.Fatalf("Begin = %v lease %+v, want first_run at version 1", c.Outcome, c.Lease)
			}
			if got := ambiguities(); got != 1 {
				t.Errorf("ambiguities settled = %d, want one", got)
			}
			if got := records(t, direct); got != 1 {
				t.Errorf("records = %d, want 1", got)
			}
			if err := via.Finish(context.Background(), c.Lease, Completed(`{}`)); err != nil {
				t.Errorf("Finish under the recovered lease: %v", err)
			}
		})
	}
}

// TestAmbiguousFinish: a finish whose commit's answer (or request) is
// lost is applied exactly once, and the lease follows it.
func (h suite) TestAmbiguousFinish(t *testing.T) {
	for _, tt := range lossModes {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			clock := NewClock()
			direct := h.Open(t, clock)
			via, cut, ambiguities := h.Faulty(t, direct, clock)
			req := Request(t, "tenant/alice", "ambiguous-finish", `{}`)
			c := MustBegin(t, via, req, store.FirstRun)
			fired, remove := cut(t, OpFinish, tt.loss)
			err := via.Finish(ctx, c.Lease, Completed(`{"finished":true}`))
			remove()
			if !fired() {
				t.Fatal("the tripwire never cut the finish")
			}
			if err != nil {
				t.Fatalf("Finish: %v, want success: the update applied (now or on the re-run)", err)
			}
			if got := ambiguities(); got != 1 {
				t.Errorf("ambiguities settled = %d, want one", got)
			}
			rec, err := direct.Read(ctx, req.Scope)
			if err != nil {
				t.Fatal(err)
			}
			if rec.State != idempotency.Completed || rec.Version != 2 || c.Lease.Version != 2 {
				t.Errorf("record %s v%d, lease v%d; want COMPLETED applied once (v2) and the lease following it",
					rec.State, rec.Version, c.Lease.Version)
			}
			if diff := cmp.Diff(Completed(`{"finished":true}`).Snapshot, rec.Snapshot); diff != "" {
				t.Errorf("stored snapshot (-want +got):\n%s", diff)
			}
		})
	}
}
