package sqlstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/idemcoord/idemcoord/fencing"
)

// TestMoveFencesIsMoveFenceForEachShardInOneTransaction: a batch of fence
// moves applies each as MoveFence would, a compare-and-swap on its own
// old epoch: the moves whose epoch matches are applied with one audit row
// each, a move already applied (a rolled-forward retry) is success with
// no second row, and a move from a retired epoch is a MoveConflictError
// naming what the fence holds, changing nothing.
func TestMoveFencesIsMoveFenceForEachShardInOneTransaction(t *testing.T) {
	ctx := context.Background()
	s := openBare(t)
	if err := s.BootstrapFences(ctx, 9, threeRegions); err != nil {
		t.Fatal(err)
	}
	// Shard 3 was already moved to eu-west (by this batch's earlier run),
	// shard 6 to ap-south (by someone else).
	if err := s.MoveFence(ctx, fencing.Move{Shard: 3, From: 1, To: "eu-west", Operator: "controller", Reason: "us-east down"}); err != nil {
		t.Fatal(err)
	}
	if err := s.MoveFence(ctx, fencing.Move{Shard: 6, From: 1, To: "ap-south", Operator: "bob", Reason: "drain"}); err != nil {
		t.Fatal(err)
	}
	moves := []fencing.Move{
		{Shard: 0, From: 1, To: "eu-west", Operator: "controller", Reason: "us-east down"},
		{Shard: 3, From: 1, To: "eu-west", Operator: "controller", Reason: "us-east down"},
		{Shard: 6, From: 1, To: "eu-west", Operator: "controller", Reason: "us-east down"},
	}
	errs := s.MoveFences(ctx, moves)
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("moves of shards 0 and 3: %v, %v; want applied (3: already)", errs[0], errs[1])
	}
	var conflict *fencing.MoveConflictError
	if !errors.As(errs[2], &conflict) || conflict.Epoch != 2 || conflict.Owner != "ap-south" {
		t.Fatalf("move of shard 6 from a retired epoch: %v, want MoveConflictError at epoch 2 owned by ap-south", errs[2])
	}
	for shard, want := range map[int]string{0: "eu-west", 3: "eu-west", 6: "ap-south"} {
		if epoch, owner, err := s.Fence(ctx, shard); err != nil || epoch != 2 || owner != want {
			t.Fatalf("shard %d fence = %d %q %v, want 2 %s", shard, epoch, owner, err, want)
		}
	}
	log, err := s.AuditLog(ctx, 20)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]int{}
	for _, e := range log {
		if e.Action == "move_fence" {
			rows[e.Detail]++
		}
	}
	if rows[moves[0].String()] != 1 || rows[moves[1].String()] != 1 || rows[moves[2].String()] != 0 || len(rows) != 3 {
		t.Fatalf("move_fence audit rows by detail: %v; want one for each move applied (0, 3 once, 6 by bob)", rows)
	}
	// The whole batch again: every move already applied or refused, nothing written.
	again := s.MoveFences(ctx, moves[:2])
	if again[0] != nil || again[1] != nil {
		t.Fatalf("the batch run again: %v; want success (already applied)", again)
	}
	if log2, err := s.AuditLog(ctx, 20); err != nil || len(log2) != len(log) {
		t.Fatalf("audit rows after the re-run: %d (%v), want %d (no second row)", len(log2), err, len(log))
	}
}
