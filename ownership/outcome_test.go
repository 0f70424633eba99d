package ownership_test

import (
	"errors"
	"testing"

	"github.com/idemcoord/idemcoord/ownership"
)

// TestAMovePlannedOnATransferInFlightEndsAtItsOwnTarget: a caller (a
// failback) reads a shard FENCING, half moved by a failover whose mover
// died after the SQL fence moved, and plans to move it elsewhere. Its
// MoveBatch finishes the failover to the failover's own target and then
// makes its own move from there, in the same call, whether the shard is
// still FENCING when the batch runs or someone finished it in between;
// epochs only grow and etcd and SQL agree at every end.
func TestAMovePlannedOnATransferInFlightEndsAtItsOwnTarget(t *testing.T) {
	for _, finishedInBetween := range []bool{false, true} {
		name := "still_fencing"
		if finishedInBetween {
			name = "finished_in_between"
		}
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			const shards, shard = 6, 3 // home us-east
			d, s, _ := setup(t, shards)
			d.SetAfterStep(func(step string) error {
				if step == "fenced" {
					return errKilled
				}
				return nil
			})
			if _, err := d.Move(ctx, shard, "eu-west", ownership.FailedOver, "controller", "us-east down"); !errors.Is(err, errKilled) {
				t.Fatalf("killed failover returned %v, want the kill", err)
			}
			d.SetAfterStep(nil)
			read, err := d.Get(ctx, shard)
			if err != nil {
				t.Fatal(err)
			}
			if read.State != ownership.Fencing || read.Epoch != 2 || read.Owner != "eu-west" {
				t.Fatalf("after the kill: %s, want FENCING to eu-west at epoch 2", read)
			}
			if finishedInBetween {
				if _, err := d.Move(ctx, shard, "eu-west", ownership.FailedOver, "controller", "finish",
					ownership.FromEpoch(1)); err != nil {
					t.Fatal(err)
				}
			}
			got, errs := d.MoveBatch(ctx, []ownership.Planned{{Entry: read, To: "us-east", Final: ownership.Active}},
				"oncall", "failback", 4)
			if errs[0] != nil {
				t.Fatalf("failback planned on the transfer in flight: %v, want it made", errs[0])
			}
			after := agree(t, d, s)[shard]
			if after.Owner != "us-east" || after.Epoch != 3 || after.State != ownership.Active {
				t.Fatalf("after the failback: %s, want us-east at epoch 3 ACTIVE", after)
			}
			if got[0].Owner != after.Owner || got[0].Epoch != after.Epoch || got[0].State != after.State {
				t.Fatalf("MoveBatch returned %s, directory holds %s", got[0], after)
			}
		})
	}
}
