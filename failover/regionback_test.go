package failover_test

import (
	"errors"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/failover"
)

// TestAFailoverNeverMovesAShardAwayFromARegionThatRegisteredAgain: a
// region failover plans on one listing, taken while the region was
// failed, and moves the shards in batches. When an instance of the region
// registers again before the moves are made (the region is back, and an
// operator may be failing it back already), none of them is made: etcd
// refuses every transfer the failover had not started yet, the failover
// says the region came back, and nothing leaves the region.
func TestAFailoverNeverMovesAShardAwayFromARegionThatRegisteredAgain(t *testing.T) {
	ctx := ctxT(t)
	e := setup(t)
	live := everyRegion(t, e)
	fake := clock.NewFake(epoch0())
	c, err := failover.NewController(failover.Config{Client: client(t), Directory: e.dir, Topology: e.topo,
		Audit: e.store, Name: "c", Clock: fake, ConfirmDelay: confirm, StartupGrace: grace, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Tracker().Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	live["us-east"].kill()
	var states map[string]failover.RegionState
	eventually(t, "us-east failed", func() { fake.Advance(confirm) }, func() bool {
		states, err = c.Tracker().Refresh(ctx)
		return err == nil && states["us-east"] == failover.Failed
	})
	before := owners(t, e)
	// us-east registers again after the failover decided on its failure.
	instance(t, e.cli, e.pfx, "us-east", "i2")
	leads := clientv3.Compare(clientv3.CreateRevision(e.pfx+"no-such-key"), "=", 0)
	moved, err := c.FailRegion(ctx, leads, "us-east", states)
	if !errors.Is(err, failover.ErrRegionBack) {
		t.Errorf("failover of a region that registered again: %v, want ErrRegionBack", err)
	}
	for _, m := range moved {
		if m.Err == "" {
			t.Errorf("shard %d moved away from us-east after it registered again: %+v", m.Shard, m)
		}
	}
	after := owners(t, e)
	for s, en := range before {
		if after[s] != en {
			t.Errorf("shard %d: %s, want it left as it was (%s)", s, after[s], en)
		}
	}
}
