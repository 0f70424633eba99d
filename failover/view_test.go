package failover_test

import (
	"context"
	"testing"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/failover"
)

// TestLeaderPublishesTheStatesItDecidesBy: the leading controller writes
// its view of the regions to etcd (ReadView), and rewrites it when a
// region's state changes, so an operator's tool (failover.Current) sees
// the controller's "suspect" and "failed", not a view of its own.
func TestLeaderPublishesTheStatesItDecidesBy(t *testing.T) {
	e := setup(t)
	live := everyRegion(t, e)
	fake := clock.NewFake(epoch0())
	c := start(t, e, "c1", fake)
	state := func(region string) failover.RegionState {
		v, ok, err := failover.ReadView(context.Background(), e.cli, e.pfx)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return ""
		}
		for _, s := range v.Regions {
			if s.Region == region {
				return s.State
			}
		}
		return ""
	}
	eventually(t, "a view with us-east healthy", nil, func() bool { return c.Leading() && state("us-east") == failover.Healthy })
	live["us-east"].kill()
	eventually(t, "the view to say us-east failed", func() { fake.Advance(failover.DefaultPollInterval) }, func() bool {
		return state("us-east") == failover.Failed
	})
	sts, v, fromController, err := failover.Current(context.Background(), e.cli, e.pfx, e.topo)
	if err != nil || !fromController || v.Controller != "c1" {
		t.Fatalf("Current: %v, from the controller %v (%q)", err, fromController, v.Controller)
	}
	for _, s := range sts {
		if s.Region == "us-east" && (s.State != failover.Failed || s.Instances != 0) {
			t.Errorf("Current us-east = %+v, want failed with no live instance", s)
		}
		if s.Region == "eu-west" && (s.State != failover.Healthy || s.Instances != 1) {
			t.Errorf("Current eu-west = %+v, want healthy with one live instance", s)
		}
	}
}
