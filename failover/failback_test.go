package failover_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/ownership"
)

// TestFailbackConvergesWhenAFailoverLeftTheShardHalfMoved: a region
// failover's mover died after the SQL fence of one of us-east's shards
// moved to eu-west (etcd FENCING at epoch 2, SQL at epoch 2 owned by
// eu-west), and us-east is back. One failback call finishes that transfer
// to its own target and then brings the shard home (epoch 3), like every
// other us-east shard, instead of refusing it as a conflict; etcd and SQL
// agree afterwards.
func TestFailbackConvergesWhenAFailoverLeftTheShardHalfMoved(t *testing.T) {
	for _, drain := range []time.Duration{0, time.Second} {
		t.Run(fmt.Sprintf("drain_%s", drain), func(t *testing.T) {
			ctx := ctxT(t)
			e := setup(t)
			r := repair(e)
			r.DrainTimeout = drain
			if _, err := r.Failover(ctx, "us-east", "oncall", "us-east down"); err != nil {
				t.Fatal(err)
			}
			const shard = 3 // home us-east, failed over to eu-west at epoch 2
			// Shard 0 (home us-east) came back and was failed over again by
			// a mover that died after the SQL step: etcd FENCING at epoch 4,
			// the SQL fence at epoch 4 owned by eu-west.
			if _, err := e.dir.Move(ctx, 0, "us-east", ownership.Active, "oncall", "back"); err != nil {
				t.Fatal(err)
			}
			left := ownership.Entry{Owner: "eu-west", Epoch: 4, State: ownership.Fencing, Transfer: &ownership.Transfer{
				FromOwner: "us-east", FromEpoch: 3, FromState: ownership.Active, Final: ownership.FailedOver,
				Operator: "controller", Reason: "region us-east failed"}}
			b, err := json.Marshal(left)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.cli.Put(ctx, fmt.Sprintf("%sshards/%05d", e.pfx, 0), string(b)); err != nil {
				t.Fatal(err)
			}
			if err := e.store.MoveFence(ctx, fencing.Move{Shard: 0, From: 3, To: "eu-west", Operator: "controller",
				Reason: "region us-east failed"}); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Failback(ctx, "us-east", "oncall", "us-east back"); err != nil {
				t.Fatalf("one failback with a shard left half moved by the failover: %v, want every shard home", err)
			}
			got := owners(t, e)
			if got[0] != entry(0, "us-east", 5, ownership.Active) {
				t.Errorf("half-moved shard after the failback: %s, want us-east at epoch 5 ACTIVE", got[0])
			}
			if got[shard] != entry(shard, "us-east", 3, ownership.Active) {
				t.Errorf("shard %d after the failback: %s, want us-east at epoch 3 ACTIVE", shard, got[shard])
			}
		})
	}
}
