package failover_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/ownership"
)

// TestAnInterruptedTransferIsFinishedByTheLeaderOnceItStaysFencing
// leaves a shard the way a mover that died (or a failback that timed
// out) between its etcd and SQL steps leaves it: FENCING in etcd at the
// next epoch, the SQL fence still at the old one, every region healthy.
// Nobody else will touch it, and the shard refuses every write until
// someone finishes it: the leading controller must, once it has stayed
// so for StuckAfter on the controller's clock, and not before; etcd and
// SQL then agree on the transfer's own target and final state.
func TestAnInterruptedTransferIsFinishedByTheLeaderOnceItStaysFencing(t *testing.T) {
	ctx := ctxT(t)
	e := setup(t)
	everyRegion(t, e)
	fake := clock.NewFake(epoch0())
	const stuckAfter = time.Minute
	c := start(t, e, "c1", fake, func(c *failover.Config) { c.StuckAfter = stuckAfter })
	eventually(t, "c1 to lead and see every region healthy", nil, func() bool {
		st := c.States()
		return c.Leading() && st["us-east"] == failover.Healthy && st["eu-west"] == failover.Healthy &&
			st["ap-south"] == failover.Healthy
	})
	const shard = 3 // home us-east
	left := ownership.Entry{Owner: "eu-west", Epoch: 2, State: ownership.Fencing, Transfer: &ownership.Transfer{
		FromOwner: "us-east", FromEpoch: 1, FromState: ownership.Active, Final: ownership.Active,
		Operator: "idemctl", Reason: "planned move"}}
	b, err := json.Marshal(left)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.cli.Put(ctx, fmt.Sprintf("%sshards/%05d", e.pfx, shard), string(b)); err != nil {
		t.Fatal(err)
	}
	leftAt := fake.Now()
	eventually(t, "the interrupted transfer to be finished", func() { fake.Advance(stuckAfter / 8) }, func() bool {
		en, err := e.dir.Get(context.Background(), shard)
		return err == nil && en.State != ownership.Fencing
	})
	if waited := fake.Now().Sub(leftAt); waited < stuckAfter {
		t.Errorf("finished %v after the transfer was left, want no sooner than StuckAfter %v", waited, stuckAfter)
	}
	en, err := e.dir.Get(ctx, shard)
	if err != nil {
		t.Fatal(err)
	}
	if en.Owner != "eu-west" || en.Epoch != 2 || en.State != ownership.Active {
		t.Errorf("finished shard = %s, want the transfer's own eu-west at epoch 2 ACTIVE", en)
	}
	agree(t, e)
}
