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
		if !errors.As(err, &nh) || len(moved) != 0 || !strings.Contains(err.Error(), "us-east is failed for 1m30s with 0 live instance(s)") {
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
	if len(rows) != 1 || !strings.HasSuffix(rows[0].Detail, "forced=true (us-east was failed with 0 live instances)") {
		t.Errorf("failback audit rows %+v, want one saying it was forced from failed", rows)
	}
}
