package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/store"
)

// TestAFencedOutHolderIsTakenOverAtOnceOnlyWhereAllowed: an operation
// claimed in us-east at epoch 1 is still running (its 30 s lease live: the
// clock never moves) when its shard moves to eu-west at epoch 2. A claim
// in eu-west that allows it (ClaimRequest.TakeOverFenced: the endpoint's
// upstream deduplicates by operation id) takes it over at once, the same
// operation id; one that does not gets InFlight for the rest of the lease,
// as before. A holder that is not fenced out (claimed in eu-west at epoch
// 2) is never taken over early, whatever the request allows. The fenced
// holder's late finish is refused by the fence. The store's own update
// enforces the rule, not only the decision before it: a recovery TakeOver
// without the permission loses.
func (h suite) TestAFencedOutHolderIsTakenOverAtOnceOnlyWhereAllowed(t *testing.T) {
	ctx := context.Background()
	clock := NewClock()
	s := h.Open(t, clock)
	west := h.Reopen(t, s, clock) // the new owner's instance, its own pool
	const actor = "tenant/alice"
	shard := shardOf(actor)

	inEast := Request(t, actor, "moved-mid-run", `{"amount":"7"}`)
	held := MustBegin(t, s, inEast, store.FirstRun)
	if err := s.MoveFence(ctx, fencing.Move{Shard: shard, From: 1, To: "eu-west", Operator: "test", Reason: "failover"}); err != nil {
		t.Fatal(err)
	}
	inWest := func(key string, fenced bool) store.ClaimRequest {
		req := Request(t, actor, key, `{"amount":"7"}`)
		req.Token = fencing.Token{Shard: shard, Epoch: 2, Region: "eu-west"}
		req.TakeOverFenced = fenced
		return req
	}

	// Without the permission: the lease rules, as before.
	if busy := MustBegin(t, west, inWest("moved-mid-run", false), store.InFlight); busy.RetryAfter != 30*time.Second {
		t.Errorf("retry after = %v, want the whole remaining lease 30s", busy.RetryAfter)
	}
	// The store's update refuses it too.
	if _, err := west.TakeOver(ctx, held.Record, inWest("moved-mid-run", false)); !errors.Is(err, store.ErrLostOwnership) {
		t.Fatalf("recovery takeover of a live lease without the permission: %v, want ErrLostOwnership", err)
	}

	// With it: taken over now, the same operation.
	taken := MustBegin(t, west, inWest("moved-mid-run", true), store.TakenOver)
	if !taken.Fenced || taken.Lease.OperationID != held.Lease.OperationID || taken.Lease.Token.Epoch != 2 {
		t.Fatalf("takeover: fenced %v, operation %v (want %v), epoch %d (want 2)", taken.Fenced,
			taken.Lease.OperationID, held.Lease.OperationID, taken.Lease.Token.Epoch)
	}
	var stale *fencing.StaleEpochError
	if err := s.Finish(ctx, held.Lease, Completed(`{"by":"east"}`)); !errors.As(err, &stale) {
		t.Errorf("the fenced holder's finish: %v, want *fencing.StaleEpochError", err)
	}
	if err := west.Finish(ctx, taken.Lease, Completed(`{"by":"west"}`)); err != nil {
		t.Fatalf("the new owner's finish: %v", err)
	}

	// A holder of the current epoch keeps its lease.
	live := MustBegin(t, west, inWest("claimed-after-the-move", false), store.FirstRun)
	if busy := MustBegin(t, west, inWest("claimed-after-the-move", true), store.InFlight); busy.RetryAfter != 30*time.Second {
		t.Errorf("live holder of the current epoch: retry after = %v, want 30s", busy.RetryAfter)
	}
	if _, err := west.TakeOver(ctx, live.Record, inWest("claimed-after-the-move", true)); !errors.Is(err, store.ErrLostOwnership) {
		t.Errorf("recovery takeover of a live holder of the current epoch: %v, want ErrLostOwnership", err)
	}
}

// TestFencedFindsOnlyRunningOperationsOfAnOlderEpoch: the scan a region
// runs on the shards it has just received returns the running operations
// last written before the move (with their stored async request, or
// none), on the shares asked for, and nothing finished or claimed since.
func (h suite) TestFencedFindsOnlyRunningOperationsOfAnOlderEpoch(t *testing.T) {
	ctx := context.Background()
	clock := NewClock()
	s := h.Open(t, clock)
	const pay = "POST /v1/payments"
	alice, bob := "tenant/alice", "tenant/bob"
	begin := func(actor, key string, epoch int64, region string) store.Claim {
		req := Request(t, actor, key, `{}`)
		req.Token.Epoch, req.Token.Region = epoch, region
		return MustBegin(t, s, req, store.FirstRun)
	}
	running := begin(alice, "running", 1, Region)
	queued := begin(alice, "queued", 1, Region)
	if err := s.SaveRequest(ctx, queued.Lease, []byte(`request`)); err != nil {
		t.Fatal(err)
	}
	done := begin(alice, "done", 1, Region)
	if err := s.Finish(ctx, done.Lease, Completed(`{}`)); err != nil {
		t.Fatal(err)
	}
	other := begin(bob, "not-moved", 1, Region)
	for _, sh := range []int{shardOf(alice)} {
		if err := s.MoveFence(ctx, fencing.Move{Shard: sh, From: 1, To: "eu-west", Operator: "test", Reason: "failover"}); err != nil {
			t.Fatal(err)
		}
	}
	begin(alice, "after-the-move", 2, "eu-west")

	scan := func(runnable ...store.Runnable) map[uuid.UUID]string {
		t.Helper()
		got, err := s.Fenced(ctx, store.StrandedScan{Runnable: runnable, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		out := map[uuid.UUID]string{}
		for _, q := range got {
			out[q.Record.OperationID] = string(q.Request)
		}
		return out
	}
	want := map[uuid.UUID]string{running.Lease.OperationID: "", queued.Lease.OperationID: "request"}
	if diff := cmp.Diff(want, scan(store.Runnable{Endpoints: []string{pay}, AllShards: true})); diff != "" {
		t.Errorf("every shard (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, scan(store.Runnable{Endpoints: []string{pay}, Shards: []int{shardOf(alice)}})); diff != "" {
		t.Errorf("the moved shard (-want +got):\n%s", diff)
	}
	if got := scan(store.Runnable{Endpoints: []string{pay}, Shards: []int{shardOf(bob)}}); len(got) != 0 {
		t.Errorf("a shard that did not move: %v, want nothing (not %v)", got, other.Lease.OperationID)
	}
	if got := scan(store.Runnable{Endpoints: []string{"POST /v1/other"}, AllShards: true}); len(got) != 0 {
		t.Errorf("another endpoint: %v, want nothing", got)
	}
	if _, err := s.Fenced(ctx, store.StrandedScan{}); err == nil {
		t.Error("a scan without a limit: no error")
	}
}
