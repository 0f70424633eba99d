package failover_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/failover"
)

// TestFailbackAndDrainRefuseAnUnhealthyRegionUnlessForced: with Status
// saying us-east is failed, Failback and Drain of us-east move nothing and
// return a *RegionNotHealthyError naming the state, its age and the live
// instances; with Force the failback goes ahead and its audit row says it
// was forced and from what state.
func TestFailbackAndDrainRefuseAnUnhealthyRegionUnlessForced(t *testing.T) {
	ctx := ctxT(t)
	e := setup(t)
	r := repair(e)
	if _, err := r.Failover(ctx, "us-east", "oncall", "us-east unreachable"); err != nil {
		t.Fatal(err)
	}
	before := owners(t, e)
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	r.Clock = clock.NewFake(now)
	r.Status = func(region string) failover.RegionStatus {
		if region == "us-east" {
			return failover.RegionStatus{Region: region, State: failover.Failed, Since: now.Add(-90 * time.Second)}
		}
		return failover.RegionStatus{Region: region, State: failover.Healthy, Instances: 1}
	}
	for name, call := range map[string]func() ([]failover.Moved, error){
		"failback": func() ([]failover.Moved, error) { return r.Failback(ctx, "us-east", "oncall", "back?") },
		"drain":    func() ([]failover.Moved, error) { return r.Drain(ctx, "us-east", "oncall", "maintenance") },
	} {
		moved, err := call()
		var nh *failover.RegionNotHealthyError
		if !errors.As(err, &nh) || len(moved) != 0 || !strings.Contains(err.Error(), "us-east is failed for 1m30s with no live instance;") {
			t.Errorf("%s us-east while failed: moved %v, err %v", name, moved, err)
		}
	}
	if after := owners(t, e); len(after) != len(before) {
		t.Fatalf("ownership changed")
	} else {
		for s, en := range before {
			if after[s] != en {
				t.Errorf("a refused repair moved shard %d: %s -> %s", s, en, after[s])
			}
		}
	}
	r.Force = true
	moved, err := r.Failback(ctx, "us-east", "oncall", "forced")
	if err != nil || len(moved) == 0 {
		t.Fatalf("forced failback: %v %v", moved, err)
	}
	rows := audit(t, e.store, "failback")
	if len(rows) != 1 || !strings.HasSuffix(rows[0].Detail, "forced=true (us-east was failed with no live instance)") {
		t.Errorf("failback audit rows %+v, want one saying it was forced from failed", rows)
	}
}

// TestAFailbackIntoARecoveringRegionNamesTheHoldAndWhenItEnds: a region
// whose instances are back but which is still recovering is held, not
// dead: the refusal names the hold time and when it ends, not the text
// about a region that cannot serve.
func TestAFailbackIntoARecoveringRegionNamesTheHoldAndWhenItEnds(t *testing.T) {
	ctx := ctxT(t)
	e := setup(t)
	r := repair(e)
	if _, err := r.Failover(ctx, "us-east", "oncall", "us-east unreachable"); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	r.Clock, r.HoldTime = clock.NewFake(now), 30*time.Second
	r.Status = func(region string) failover.RegionStatus {
		if region == "us-east" {
			return failover.RegionStatus{Region: region, State: failover.Recovering, Since: now.Add(-12 * time.Second), Instances: 1}
		}
		return failover.RegionStatus{Region: region, State: failover.Healthy, Instances: 1}
	}
	moved, err := r.Failback(ctx, "us-east", "oncall", "back")
	var nh *failover.RegionNotHealthyError
	if !errors.As(err, &nh) || len(moved) != 0 {
		t.Fatalf("failback into a recovering region: moved %v, err %v; want a refusal", moved, err)
	}
	for _, want := range []string{"us-east is recovering for 12s with 1 live instance", "hold time (30s)",
		"at 2026-01-01T12:00:18Z, in 18s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "cannot serve") {
		t.Errorf("refusal %q gives the dead-region reason for a held region", err)
	}
}

// TestADrainWithNoHealthyRegionSaysSoOnceAndAuditsWhy: draining the only
// healthy region moves nothing and returns one error naming the state of
// every other region, not one error per shard, and the drain's audit row
// says why nothing moved.
func TestADrainWithNoHealthyRegionSaysSoOnceAndAuditsWhy(t *testing.T) {
	ctx := ctxT(t)
	e := setup(t)
	r := repair(e)
	r.Status = func(region string) failover.RegionStatus {
		if region == "us-east" {
			return failover.RegionStatus{Region: region, State: failover.Healthy, Instances: 1}
		}
		return failover.RegionStatus{Region: region, State: failover.Failed}
	}
	moved, err := r.Drain(ctx, "us-east", "oncall", "kernel upgrade")
	if !errors.Is(err, failover.ErrNoTarget) || len(moved) != 0 {
		t.Fatalf("drain with no healthy region: moved %d, err %v; want ErrNoTarget and nothing moved", len(moved), err)
	}
	if n := strings.Count(err.Error(), "no healthy region"); n != 1 || strings.Contains(err.Error(), "shard 0 ") {
		t.Errorf("the error says it %d times, or per shard: %v", n, err)
	}
	if !strings.Contains(err.Error(), "no other region is healthy with a live instance") {
		t.Errorf("error %q does not say why", err)
	}
	rows := audit(t, e.store, "drain")
	if len(rows) != 1 || !strings.Contains(rows[0].Detail, "shards_moved=0") ||
		!strings.Contains(rows[0].Detail, "nothing moved, no other region is healthy with a live instance") {
		t.Errorf("drain audit rows %+v; want one saying why nothing moved", rows)
	}
}
