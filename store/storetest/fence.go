package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/store"
)

// threeRegions is a home map like region.Topology.Home: shard mod regions.
func threeRegions(shard int) string { return []string{"us-east", "eu-west", "ap-south"}[shard%3] }

func (h suite) TestBootstrapFencesGivesEveryShardItsHomeOwnerOnce(t *testing.T) {
	ctx := context.Background()
	s := h.OpenBare(t)
	if _, err := s.ShardCount(ctx); !errors.Is(err, store.ErrNotBootstrapped) {
		t.Fatalf("shard count before bootstrap: %v, want ErrNotBootstrapped", err)
	}
	const shards = 2048 // more than migration 0001's 1024 unowned rows
	if err := s.BootstrapFences(ctx, shards, threeRegions); err != nil {
		t.Fatal(err)
	}
	mv := fencing.Move{Shard: 7, From: 1, To: "us-east", Operator: "test", Reason: "drain"}
	if err := s.MoveFence(ctx, mv); err != nil {
		t.Fatal(err)
	}
	// A second bootstrap (a restart, or another instance) changes nothing,
	// least of all the moved shard.
	if err := s.BootstrapFences(ctx, shards, func(int) string { return "eu-west" }); err != nil {
		t.Fatal(err)
	}
	got, err := s.Fences(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]store.FenceRow, shards)
	for i := range want {
		want[i] = store.FenceRow{Shard: i, Epoch: 1, Owner: threeRegions(i)}
	}
	want[7] = store.FenceRow{Shard: 7, Epoch: 2, Owner: "us-east"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("fences after bootstrap, move, bootstrap (-want +got):\n%s", diff)
	}
	if n, err := s.ShardCount(ctx); err != nil || n != shards {
		t.Fatalf("shard count = %d, %v, want %d", n, err, shards)
	}
}

func (h suite) TestBootstrapFencesRefusesAnotherShardCount(t *testing.T) {
	ctx := context.Background()
	s := h.OpenBare(t)
	if err := s.BootstrapFences(ctx, 16, threeRegions); err != nil {
		t.Fatal(err)
	}
	err := s.BootstrapFences(ctx, 1024, threeRegions)
	var mm *store.ShardCountMismatchError
	if !errors.As(err, &mm) || mm.Store != 16 || mm.Configured != 1024 {
		t.Fatalf("bootstrap with 1024 on a 16-shard store: %v, want ShardCountMismatchError{16, 1024}", err)
	}
	if got := ownedFences(t, s); got != 16 {
		t.Fatalf("owned fence rows = %d, want 16 (the refused bootstrap changed nothing)", got)
	}
}

func (h suite) TestMoveFenceIsACompareAndSwapOnTheOldEpoch(t *testing.T) {
	ctx := context.Background()
	s := h.OpenBare(t)
	if err := s.BootstrapFences(ctx, 8, threeRegions); err != nil {
		t.Fatal(err)
	}
	mv := fencing.Move{Shard: 1, From: 1, To: "ap-south", Operator: "alice", Reason: "eu-west drain"}
	for range 2 { // the second is a rolled-forward retry: no-op, no second audit row
		if err := s.MoveFence(ctx, mv); err != nil {
			t.Fatalf("move %s: %v", mv, err)
		}
	}
	stale := fencing.Move{Shard: 1, From: 1, To: "us-east", Operator: "bob", Reason: "late mover"}
	err := s.MoveFence(ctx, stale)
	var conflict *fencing.MoveConflictError
	if !errors.As(err, &conflict) || !errors.Is(err, fencing.ErrMoveConflict) || conflict.Epoch != 2 || conflict.Owner != "ap-south" {
		t.Fatalf("move from a retired epoch: %v, want MoveConflictError at epoch 2 owned by ap-south", err)
	}
	if epoch, owner, err := s.Fence(ctx, 1); err != nil || epoch != 2 || owner != "ap-south" {
		t.Fatalf("fence = %d %q %v, want 2 ap-south", epoch, owner, err)
	}
	log, err := s.AuditLog(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	var moves []store.AuditEntry
	for _, e := range log {
		if e.Action == "move_fence" {
			e.ID = [16]byte{}
			moves = append(moves, e)
		}
	}
	want := []store.AuditEntry{{Operator: "alice", Action: "move_fence", Reason: "eu-west drain", Detail: mv.String()}}
	if diff := cmp.Diff(want, moves); diff != "" {
		t.Fatalf("move audit rows (-want +got):\n%s", diff)
	}
}

func (h suite) TestConcurrentMovesOfOneShardOneWins(t *testing.T) {
	ctx := context.Background()
	s := h.OpenBare(t)
	if err := s.BootstrapFences(ctx, 4, threeRegions); err != nil {
		t.Fatal(err)
	}
	const movers = 8
	errs := make([]error, movers)
	var wg sync.WaitGroup
	for i := range movers {
		wg.Go(func() {
			errs[i] = s.MoveFence(ctx, fencing.Move{Shard: 2, From: 1, To: fmt.Sprintf("region-%d", i),
				Operator: "controller", Reason: "race"})
		})
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("movers %d and %d both won", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, fencing.ErrMoveConflict):
			t.Fatalf("mover %d: %v, want ErrMoveConflict", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no mover won")
	}
	if epoch, owner, err := s.Fence(ctx, 2); err != nil || epoch != 2 || owner != fmt.Sprintf("region-%d", winner) {
		t.Fatalf("fence = %d %q %v, want epoch 2 owned by the winner region-%d", epoch, owner, err, winner)
	}
	if got, err := s.CountAudit(ctx, store.AuditFilter{Action: "move_fence"}); err != nil || got != 1 {
		t.Fatalf("move audit rows = %d, want 1", got)
	}
}

// ownedFences counts the fences that have an owner.
func ownedFences(t *testing.T, s store.Backend) int {
	t.Helper()
	rows, err := s.Fences(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range rows {
		if r.Owner != "" {
			n++
		}
	}
	return n
}
