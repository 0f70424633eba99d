package ownership_test

import (
	"errors"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idemcoord/idemcoord/ownership"
)

func TestMoveRefusedWhenItsGuardNoLongerHolds(t *testing.T) {
	ctx := ctxT(t)
	d, s, _ := setup(t, 3)
	cli := client(t, cluster(t).Endpoints())
	leader := prefix(t) + "leader"
	put, err := cli.Put(ctx, leader, "controller-1")
	if err != nil {
		t.Fatal(err)
	}
	guard := clientv3.Compare(clientv3.CreateRevision(leader), "=", put.Header.Revision)
	if _, err := d.Move(ctx, 1, "ap-south", ownership.FailedOver, "controller-1", "eu-west down", ownership.Guard(guard)); err != nil {
		t.Fatalf("move under a holding guard: %v", err)
	}
	// The controller lost its key (and another took it): its moves stop.
	if _, err := cli.Delete(ctx, leader); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, leader, "controller-2"); err != nil {
		t.Fatal(err)
	}
	_, err = d.Move(ctx, 2, "us-east", ownership.FailedOver, "controller-1", "ap-south down", ownership.Guard(guard))
	if !errors.Is(err, ownership.ErrGuardFailed) {
		t.Fatalf("move under a broken guard: %v, want ErrGuardFailed", err)
	}
	got := agree(t, d, s)
	if got[2].Owner != "ap-south" || got[2].Epoch != 1 {
		t.Fatalf("shard 2 after the refused move: %s, want untouched", got[2])
	}
}

// TestAStartGuardStopsNewTransfersButNeverLeavesOneFencing: a comparison
// given with GuardStart (a failover's "the region has not come back")
// refuses the moves it has not started once it fails, and changes nothing
// of them; a transfer already started when it fails is still finished,
// batched or alone, so no shard is left FENCING for it.
func TestAStartGuardStopsNewTransfersButNeverLeavesOneFencing(t *testing.T) {
	for _, batched := range []bool{true, false} {
		name := "batched"
		if !batched {
			name = "alone"
		}
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			d, s, _ := setup(t, 3)
			cli := client(t, cluster(t).Endpoints())
			back := prefix(t) + "back"
			start := clientv3.Compare(clientv3.CreateRevision(back), "=", 0)
			d.SetAfterStep(func(step string) error {
				if step == "fencing" {
					if _, err := cli.Put(ctx, back, "yes"); err != nil {
						return err
					}
				}
				return nil
			})
			e, err := d.Get(ctx, 0) // home us-east
			if err != nil {
				t.Fatal(err)
			}
			plan := ownership.Planned{Entry: e, To: "eu-west", Final: ownership.FailedOver}
			if !batched {
				plan.Entry.ModRevision = 0 // a plan without a revision is moved alone
			}
			_, errs := d.MoveBatch(ctx, []ownership.Planned{plan}, "controller", "us-east down", 2,
				ownership.GuardStart(start))
			if errs[0] != nil {
				t.Fatalf("a transfer started before its start guard failed: %v, want it finished", errs[0])
			}
			d.SetAfterStep(nil)
			got := agree(t, d, s)
			if got[0].Owner != "eu-west" || got[0].Epoch != 2 || got[0].State != ownership.FailedOver {
				t.Fatalf("shard 0: %s, want eu-west at epoch 2 FAILED_OVER", got[0])
			}
			// The guard fails now: the next move is refused, nothing changes.
			e, err = d.Get(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			_, errs = d.MoveBatch(ctx, []ownership.Planned{{Entry: e, To: "us-east", Final: ownership.FailedOver}},
				"controller", "eu-west down", 2, ownership.GuardStart(start))
			if !errors.Is(errs[0], ownership.ErrGuardFailed) {
				t.Fatalf("a move after its start guard failed: %v, want ErrGuardFailed", errs[0])
			}
			if got := agree(t, d, s); got[1].Owner != e.Owner || got[1].Epoch != e.Epoch || got[1].State != e.State {
				t.Fatalf("shard 1 after the refused move: %s, want %s", got[1], e)
			}
		})
	}
}
