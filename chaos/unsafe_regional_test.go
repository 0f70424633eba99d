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
// (cluster.UnsafeRegionLocalClaims). The region loss and the cross-region
// retries then run keys a second time, and the checker must say so: a
// second operation and payment for a key (I1) and a second charge behind
// an acknowledged success (I2).
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
	for _, inv := range []validate.Invariant{validate.I1, validate.I2} {
		if len(res.Verdict.Of(inv)) == 0 {
			t.Errorf("no %s violation reported", inv)
		}
	}
	if res.Report.Duplicates == 0 {
		t.Errorf("no duplicates counted")
	}
}

// TestRegionalRefusesAnUnknownUnsafeMode keeps a typo from running a
// safe drill that was meant to be unsafe.
func TestRegionalRefusesAnUnknownUnsafeMode(t *testing.T) {
	_, err := cluster.StartRegional(context.Background(), cluster.Options{Unsafe: "skip-the-fence"})
	if !errors.Is(err, cluster.ErrUnknownUnsafe) {
		t.Errorf("StartRegional(unsafe typo) = %v, want ErrUnknownUnsafe", err)
	}
}
