package ownership_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/ownership"
)

var errKilled = errors.New("test: mover killed")

func TestAMoverKilledBetweenStepsIsRolledForwardByTheNext(t *testing.T) {
	cases := []struct {
		killAfter string
		// sqlMoved: whether the SQL fence holds the new epoch when the
		// mover dies.
		sqlMoved bool
		// next is the target and final state the next mover asks for;
		// conflict says it must get a MoveConflictError after finishing
		// the interrupted transfer (it asked for something else).
		next     string
		final    ownership.State
		conflict bool
	}{
		{killAfter: "fencing", sqlMoved: false, next: "eu-west", final: ownership.FailedOver},
		{killAfter: "fenced", sqlMoved: true, next: "eu-west", final: ownership.FailedOver},
		{killAfter: "fencing", sqlMoved: false, next: "ap-south", final: ownership.Active, conflict: true},
		{killAfter: "fenced", sqlMoved: true, next: "ap-south", final: ownership.Active, conflict: true},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("after_%s_next_%s", tc.killAfter, tc.next), func(t *testing.T) {
			ctx := ctxT(t)
			const shards, shard = 6, 3 // home us-east
			d, s, _ := setup(t, shards)
			cache, err := openCache(ctx, ownership.CacheConfig{Client: client(t, cluster(t).Endpoints()), Prefix: prefix(t), Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			defer cache.Close()
			actor := actorOf(t, shard, shards)

			d.SetAfterStep(func(step string) error {
				if step == tc.killAfter {
					return errKilled
				}
				return nil
			})
			_, err = d.Move(ctx, shard, "eu-west", ownership.FailedOver, "controller", "us-east down")
			if !errors.Is(err, errKilled) {
				t.Fatalf("killed mover returned %v, want the kill", err)
			}
			d.SetAfterStep(nil)

			// In between, the shard is FENCING: nobody serves it, and what
			// is recorded is enough to finish.
			e, err := d.Get(ctx, shard)
			if err != nil {
				t.Fatal(err)
			}
			want := ownership.Transfer{FromOwner: "us-east", FromEpoch: 1, FromState: ownership.Active,
				Final: ownership.FailedOver, Operator: "controller", Reason: "us-east down"}
			if e.State != ownership.Fencing || e.Serving() || e.Owner != "eu-west" || e.Epoch != 2 || e.Transfer == nil || *e.Transfer != want {
				t.Fatalf("after the kill: %s %+v, want FENCING to eu-west at epoch 2 with %+v", e, e.Transfer, want)
			}
			if err := cache.WaitRevision(ctx, e.ModRevision); err != nil {
				t.Fatal(err)
			}
			if _, _, state, ok := cache.Owner(shard); !ok || state != string(ownership.Fencing) {
				t.Fatalf("cache says %q for the shard in transfer, want FENCING", state)
			}
			epoch, owner, err := s.Fence(ctx, shard)
			if err != nil {
				t.Fatal(err)
			}
			if moved := epoch == 2 && owner == "eu-west"; moved != tc.sqlMoved || (!moved && (epoch != 1 || owner != "us-east")) {
				t.Fatalf("SQL fence after the kill: epoch %d owner %q, want moved=%v", epoch, owner, tc.sqlMoved)
			}
			if tc.sqlMoved {
				if _, err := claim(t, s, actor, "k-old", fencing.Token{Shard: shard, Epoch: 1, Region: "us-east"}); !errors.Is(err, fencing.ErrStaleEpoch) {
					t.Fatalf("old owner's claim after the SQL bump: %v, want ErrStaleEpoch", err)
				}
			}

			// The next mover (another process: a fresh Directory) finishes it.
			next := ownership.NewDirectory(client(t, cluster(t).Endpoints()), s, ownership.WithPrefix(prefix(t)), ownership.WithLogger(quiet()))
			got, err := next.Move(ctx, shard, tc.next, tc.final, "oncall", "next mover")
			if tc.conflict != errors.Is(err, fencing.ErrMoveConflict) || (!tc.conflict && err != nil) {
				t.Fatalf("next mover: %v, want conflict=%v", err, tc.conflict)
			}
			after := agree(t, d, s)[shard]
			if after.Owner != "eu-west" || after.Epoch != 2 || after.State != ownership.FailedOver {
				t.Fatalf("after the next mover: %s, want the interrupted transfer finished (eu-west, 2, FAILED_OVER)", after)
			}
			if !tc.conflict && (got.Owner != after.Owner || got.Epoch != after.Epoch) {
				t.Fatalf("next mover returned %s, directory holds %s", got, after)
			}
			// And the shard moves on from there, epochs still growing.
			again, err := next.Move(ctx, shard, "us-east", ownership.Active, "oncall", "failback")
			if err != nil || again.Epoch != 3 {
				t.Fatalf("failback after the roll-forward: %s, %v; want epoch 3", again, err)
			}
			agree(t, d, s)
		})
	}
}
