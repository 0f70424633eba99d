package patronistore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/patronistore"
)

var _ ownership.FenceBatcher = (*patronistore.Store)(nil)

// TestMoveFencesMovesEachFenceOnItsShardsOwnCluster: a batch of fence
// moves over shards of two clusters moves each fence on its own cluster
// (where its records are), each as MoveFence would, and answers each move
// in its place: a move from a retired epoch on one cluster is that move's
// MoveConflictError only, the others applied.
func TestMoveFencesMovesEachFenceOnItsShardsOwnCluster(t *testing.T) {
	ctx := context.Background()
	const shards = 16
	odd := func(n int) int { return n % 2 } // even shards on east-1, odd on east-2
	s, err := patronistore.New(openClusters(t, []string{pgtest.NewDatabase(t), pgtest.NewDatabase(t)}), shards, odd, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.BootstrapFences(ctx, shards, func(int) string { return "us-east" }); err != nil {
		t.Fatal(err)
	}
	if err := s.MoveFence(ctx, fencing.Move{Shard: 5, From: 1, To: "ap-south", Operator: "bob", Reason: "drain"}); err != nil {
		t.Fatal(err)
	}
	moves := []fencing.Move{
		{Shard: 2, From: 1, To: "eu-west", Operator: "controller", Reason: "us-east down"},
		{Shard: 3, From: 1, To: "eu-west", Operator: "controller", Reason: "us-east down"},
		{Shard: 5, From: 1, To: "eu-west", Operator: "controller", Reason: "us-east down"},
		{Shard: 8, From: 1, To: "eu-west", Operator: "controller", Reason: "us-east down"},
	}
	errs := s.MoveFences(ctx, moves)
	for _, i := range []int{0, 1, 3} {
		if errs[i] != nil {
			t.Fatalf("move of shard %d: %v, want applied", moves[i].Shard, errs[i])
		}
	}
	var conflict *fencing.MoveConflictError
	if !errors.As(errs[2], &conflict) || conflict.Epoch != 2 || conflict.Owner != "ap-south" {
		t.Fatalf("move of shard 5 from a retired epoch: %v, want MoveConflictError at epoch 2 owned by ap-south", errs[2])
	}
	for _, m := range moves {
		want := "eu-west"
		if m.Shard == 5 {
			want = "ap-south"
		}
		own := s.Clusters()[odd(m.Shard)].Store
		if epoch, owner, err := own.Fence(ctx, m.Shard); err != nil || epoch != 2 || owner != want {
			t.Fatalf("shard %d on its own cluster: %d %q %v, want epoch 2 owned by %s", m.Shard, epoch, owner, err, want)
		}
	}
}
