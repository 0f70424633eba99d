package ownership_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// actorOf returns an actor that hashes to shard.
func actorOf(t *testing.T, want, shards int) string {
	t.Helper()
	for i := range 100000 {
		if a := fmt.Sprintf("tenant/actor-%d", i); shard.Of(a, shards) == want {
			return a
		}
	}
	t.Fatalf("no actor for shard %d", want)
	return ""
}

// claim asks the store for a new key of actor under tok.
func claim(t *testing.T, s *sqlstore.Store, actor, key string, tok fencing.Token) (store.Claim, error) {
	t.Helper()
	k, err := idempotency.ParseKeyHeader(key)
	if err != nil {
		t.Fatal(err)
	}
	fp, err := idempotency.ComputeFingerprint(idempotency.Request{Method: "POST", Path: "/v1/payments",
		ContentType: "application/json", Body: []byte(`{"amount":1}`)}, idempotency.FingerprintOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s.Begin(context.Background(), store.ClaimRequest{
		Scope: store.Scope{Actor: actor, Endpoint: "POST /v1/payments", Key: k}, Fingerprint: fp,
		Token: tok, Worker: "test", Lease: 30 * time.Second, TTL: time.Hour})
}

func TestAfterAMoveTheOldEpochIsRejectedAndEtcdAndSQLAgree(t *testing.T) {
	ctx := ctxT(t)
	const shards, shard = 12, 4
	d, s, reader := setup(t, shards)
	actor := actorOf(t, shard, shards)
	cur, err := d.Get(ctx, shard)
	if err != nil {
		t.Fatal(err)
	}
	// The home region writes at epoch 1 and keeps a lease across the move.
	before, err := claim(t, s, actor, "k-before", fencing.Token{Shard: shard, Epoch: cur.Epoch, Region: cur.Owner})
	if err != nil || before.Outcome != store.FirstRun {
		t.Fatalf("claim at epoch 1 before any move: %v %v", before.Outcome, err)
	}
	route := []string{"eu-west", "ap-south", "us-east", "eu-west", "eu-west"}
	last := cur.Epoch
	for i, to := range route {
		old := cur
		cur, err = d.Move(ctx, shard, to, ownership.Active, "test", fmt.Sprintf("move %d", i))
		if err != nil {
			t.Fatalf("move %d to %s: %v", i, to, err)
		}
		agree(t, d, s)
		if old.Owner == to {
			if cur.Epoch != old.Epoch {
				t.Fatalf("move %d to the current owner changed the epoch %d -> %d", i, old.Epoch, cur.Epoch)
			}
			continue
		}
		if cur.Epoch != last+1 || cur.Owner != to || cur.State != ownership.Active {
			t.Fatalf("move %d: %s, want epoch %d owned by %s ACTIVE", i, cur, last+1, to)
		}
		last = cur.Epoch
		rejected := fenced(t, reader)
		_, err := claim(t, s, actor, fmt.Sprintf("k-stale-%d", i), fencing.Token{Shard: shard, Epoch: old.Epoch, Region: old.Owner})
		var stale *fencing.StaleEpochError
		if !errors.As(err, &stale) || stale.Current != cur.Epoch || stale.Owner != to {
			t.Fatalf("claim with the old epoch %d after move %d: %v, want StaleEpochError at epoch %d owner %s", old.Epoch, i, err, cur.Epoch, to)
		}
		if got := fenced(t, reader); got != rejected+1 {
			t.Fatalf("fenced_writes_rejected went %d -> %d on a stale claim, want +1", rejected, got)
		}
		c, err := claim(t, s, actor, fmt.Sprintf("k-new-%d", i), fencing.Token{Shard: shard, Epoch: cur.Epoch, Region: to})
		if err != nil || c.Outcome != store.FirstRun {
			t.Fatalf("claim by the new owner at epoch %d: %v %v", cur.Epoch, c.Outcome, err)
		}
	}
	// The lease taken at epoch 1 cannot finish after the moves.
	err = s.Finish(ctx, before.Lease, store.Result{State: idempotency.Completed, Snapshot: store.Snapshot{Status: 201}})
	if !errors.Is(err, fencing.ErrStaleEpoch) {
		t.Fatalf("finish with a lease of epoch 1 after the moves: %v, want ErrStaleEpoch", err)
	}
}

func TestConcurrentMovesOfOneShardHaveExactlyOneWinner(t *testing.T) {
	ctx := ctxT(t)
	const shards, shard, movers = 6, 2, 8
	d, s, _ := setup(t, shards)
	for round := range 5 {
		start, err := d.Get(ctx, shard)
		if err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, movers)
		targets := make([]string, movers)
		gate := make(chan struct{})
		for i := range movers {
			// Every mover decided on what it read at start, and targets
			// a region no other mover targets.
			targets[i] = fmt.Sprintf("%s-r%d-m%d", regions[i%len(regions)], round, i)
			go func() {
				<-gate
				_, err := d.Move(ctx, shard, targets[i], ownership.Active, fmt.Sprintf("mover-%d", i), "race",
					ownership.FromEpoch(start.Epoch))
				errs <- err
			}()
		}
		close(gate)
		won := 0
		for range movers {
			if err := <-errs; err == nil {
				won++
			} else if !errors.Is(err, fencing.ErrMoveConflict) {
				t.Fatalf("round %d: a losing mover got %v, want a MoveConflictError", round, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d movers won, want exactly 1", round, won)
		}
		got := agree(t, d, s)[shard]
		if got.Epoch != start.Epoch+1 {
			t.Fatalf("round %d: epoch %d -> %d, want +1 (losers changed something)", round, start.Epoch, got.Epoch)
		}
		moves := fenceMoves(t, s)
		if moves != round+1 {
			t.Fatalf("round %d: %d audited fence moves, want %d (one per round)", round, moves, round+1)
		}
	}
}

// fenceMoves is how many fence moves the store's audit log holds (its
// last 100 entries).
func fenceMoves(t *testing.T, s *sqlstore.Store) int {
	t.Helper()
	audit, err := s.AuditLog(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	moves := 0
	for _, a := range audit {
		if a.Action == "move_fence" {
			moves++
		}
	}
	return moves
}
