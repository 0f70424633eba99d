package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/fencing"
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

// TestAnotherWritersChangeIsNeverTakenForALostWrite: a write whose answer
// (or request) is lost while another writer's change to the same record
// commits is never reported applied: the lease holder's heartbeat, stage
// or finish lost while a cancel commits ends in ErrLostOwnership (the
// cancelled operation's worker stops), and so does a resolve lost while a
// cancel or another resolver's verdict commits. The other writer's change
// stands, once.
func (h suite) TestAnotherWritersChangeIsNeverTakenForALostWrite(t *testing.T) {
	ctx := context.Background()
	holders := []struct {
		name  string
		write func(s store.Backend, l *store.Lease) error
	}{
		{"heartbeat", func(s store.Backend, l *store.Lease) error { return s.Heartbeat(ctx, l) }},
		{"stage", func(s store.Backend, l *store.Lease) error { return s.RecordStage(ctx, l, "reserved;reversible") }},
		{"finish", func(s store.Backend, l *store.Lease) error { return s.Finish(ctx, l, Completed(`{"worker":true}`)) }},
	}
	for _, w := range holders {
		for _, tt := range lossModes {
			t.Run(w.name+" while a cancel commits, "+tt.name, func(t *testing.T) {
				clock := NewClock()
				direct := h.Open(t, clock)
				via, cut, _ := h.Faulty(t, direct, clock)
				req := Request(t, "tenant/alice", "cancelled-under-a-write", `{}`)
				req.Pending = true
				c := MustBegin(t, via, req, store.FirstRun)
				rec, err := direct.Read(ctx, req.Scope)
				if err != nil {
					t.Fatal(err)
				}
				if err := direct.Cancel(ctx, rec, req.Token, cancelled()); err != nil {
					t.Fatalf("Cancel: %v", err)
				}
				fired, remove := cut(t, OpFinish, tt.loss)
				err = w.write(via, c.Lease)
				remove()
				if !fired() {
					t.Fatalf("the tripwire never cut the %s", w.name)
				}
				if !errors.Is(err, store.ErrLostOwnership) {
					t.Errorf("%s lost on the wire after a cancel: %v, want ErrLostOwnership", w.name, err)
				}
				got, err := direct.Read(ctx, req.Scope)
				if err != nil || got.State != idempotency.Cancelled || got.Version != rec.Version+1 {
					t.Errorf("record %s v%d (%v), want the cancel alone (CANCELLED v%d)", got.State, got.Version, err, rec.Version+1)
				}
			})
		}
	}
	others := []struct {
		name  string
		write func(s store.Backend, rec store.Record, tok fencing.Token) error
		want  idempotency.State
	}{
		{"a cancel", func(s store.Backend, rec store.Record, tok fencing.Token) error {
			return s.Cancel(ctx, rec, tok, cancelled())
		}, idempotency.Cancelled},
		{"another resolver", func(s store.Backend, rec store.Record, tok fencing.Token) error {
			return s.Resolve(ctx, rec, tok, Completed(`{"resolver":"other"}`))
		}, idempotency.Completed},
	}
	for _, o := range others {
		for _, tt := range lossModes {
			t.Run("resolve while "+o.name+" commits, "+tt.name, func(t *testing.T) {
				clock := NewClock()
				direct := h.Open(t, clock)
				via, cut, _ := h.Faulty(t, direct, clock)
				req, rec := unknownRecord(t, direct, "resolved-under-a-write")
				if err := o.write(direct, rec, req.Token); err != nil {
					t.Fatalf("%s: %v", o.name, err)
				}
				fired, remove := cut(t, OpFinish, tt.loss)
				err := via.Resolve(ctx, rec, req.Token, store.Result{State: idempotency.RetryableFailure, ErrorSummary: "mine"})
				remove()
				if !fired() {
					t.Fatal("the tripwire never cut the resolve")
				}
				if !errors.Is(err, store.ErrLostOwnership) {
					t.Errorf("resolve lost on the wire after %s: %v, want ErrLostOwnership", o.name, err)
				}
				got, err := direct.Read(ctx, req.Scope)
				if err != nil || got.State != o.want || got.Version != rec.Version+1 {
					t.Errorf("record %s v%d (%v), want %s's change alone (%s v%d)", got.State, got.Version, err, o.name, o.want, rec.Version+1)
				}
			})
		}
	}
}
