package sqlstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// threeRegions is a home map like region.Topology.Home: shard mod regions.
func threeRegions(shard int) string { return []string{"us-east", "eu-west", "ap-south"}[shard%3] }

// openBare opens a store on a fresh database without bootstrapping it.
func openBare(t *testing.T) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.Open(context.Background(), sqlstore.Config{Migrate: true, DSN: pgtest.NewDatabase(t), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestMoveFenceWaitsForAClaimHoldingTheFence: a claim holds its shard's
// fence row FOR SHARE until it commits, so a move of that shard waits for
// it; the claim commits under the old epoch before the move, never after.
func TestMoveFenceWaitsForAClaimHoldingTheFence(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t, nil)
	req := request(t, "tenant/alice", "in-flight", `{}`)
	inside, release := make(chan struct{}), make(chan struct{})
	claimed := make(chan error, 1)
	go func() {
		_, err := s.RunLocal(ctx, req, func(ctx context.Context, tx pgx.Tx, _ uuid.UUID) (store.Snapshot, error) {
			select {
			case <-inside:
			default:
				close(inside)
			}
			<-release
			return store.Snapshot{Status: 201}, nil
		})
		claimed <- err
	}()
	<-inside
	moved := make(chan error, 1)
	go func() {
		moved <- s.MoveFence(ctx, fencing.Move{Shard: req.Token.Shard, From: 1, To: "eu-west", Operator: "t", Reason: "drain"})
	}()
	if err := waitForLockWaiters(ctx, s, 1); err != nil {
		t.Fatalf("the move never waited on the claim's fence lock: %v", err)
	}
	close(release)
	if err := <-claimed; err != nil {
		t.Fatalf("claim holding the fence: %v", err)
	}
	if err := <-moved; err != nil {
		t.Fatalf("move after the claim: %v", err)
	}
	rec, err := s.Read(ctx, req.Scope)
	if err != nil || rec.Token.Epoch != 1 {
		t.Fatalf("claimed record: epoch %d, %v; want the claim committed at epoch 1", rec.Token.Epoch, err)
	}
	if _, err := s.Begin(ctx, request(t, "tenant/alice", "after-move", `{}`)); !errors.Is(err, fencing.ErrStaleEpoch) {
		t.Fatalf("claim at epoch 1 after the move: %v, want ErrStaleEpoch", err)
	}
}
