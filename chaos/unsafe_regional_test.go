package chaos_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/chaos"
	"github.com/idemcoord/idemcoord/chaos/cluster"
	"github.com/idemcoord/idemcoord/chaos/validate"
)

// TestCheckerCatchesRegionLocalClaims runs region-loss-transfer, seed 1,
// which is green on the real coordinator
// (TestShippedScenariosHoldOnTheRegionalCluster), against the same
// coordinator with one safety removed: its claims are region-local
// (cluster.UnsafeRegionLocalClaims). The checker must fail the run: no
// acknowledged write has its global claim in the store (I7). A second
// effect for a key (I1, I2) needs a retry of that key to reach another
// region during the failover, which the timing decides; it is logged
// when seen (in most runs).
func TestCheckerCatchesRegionLocalClaims(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dev cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var out strings.Builder
	res, err := chaos.Drill(ctx, chaos.DrillConfig{Scenario: "region-loss-transfer", Seed: 1, Duration: 25 * time.Second,
		Start: cluster.StartRegional, Unsafe: cluster.UnsafeRegionLocalClaims, Out: &out})
	t.Logf("summary:\n%.3000s", out.String())
	if !errors.Is(err, chaos.ErrViolations) {
		t.Fatalf("Drill = %v, want ErrViolations", err)
	}
	if n, acked := len(res.Verdict.Of(validate.I7)), res.Report.Acked-res.Report.Replayed; n == 0 || acked == 0 {
		t.Errorf("%d I7 violations for %d acknowledged first runs, want one per write", n, acked)
	}
	t.Logf("second effects: %d I1, %d I2 violations, %d duplicates",
		len(res.Verdict.Of(validate.I1)), len(res.Verdict.Of(validate.I2)), res.Report.Duplicates)
}

// TestRegionalRefusesAnUnknownUnsafeMode keeps a typo from running a
// safe drill that was meant to be unsafe.
func TestRegionalRefusesAnUnknownUnsafeMode(t *testing.T) {
	_, err := cluster.StartRegional(context.Background(), cluster.Options{Unsafe: "skip-the-fence"})
	if !errors.Is(err, cluster.ErrUnknownUnsafe) {
		t.Errorf("StartRegional(unsafe typo) = %v, want ErrUnknownUnsafe", err)
	}
}
