package chaos_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/chaos"
	"github.com/idemcoord/idemcoord/chaos/cluster"
	"github.com/idemcoord/idemcoord/chaos/validate"
)

// unsafeDrill is one short seeded drill of a shipped scenario in an
// unsafe mode, on the in-process regional cluster.
type unsafeDrill struct {
	scenario string
	seed     uint64
	duration time.Duration
}

// drillUnsafeAll, when set to 1, makes
// TestCheckerCatchesSecondEffectsOfSkewedExpiry run every scenario the
// regional cluster supports, not only the CI subset.
const drillUnsafeAll = "IDEMCOORD_DRILL_UNSAFE_ALL"

// skewedExpiryDrills are the scenarios the regional cluster runs whole
// (TestShippedScenariosHoldOnTheRegionalCluster keeps them green on the
// real coordinator), each as short as its faults allow: the second
// effects come from the workload's duplicate retries (a tenth of the
// acknowledged intents is sent again), not from the faults' timing, so
// every run holds dozens. ci marks the subset CI runs (a region loss
// with takeovers, failover and failback; SQL cuts and connection resets
// with ambiguous commits): 45-50 s each under -race on two cores. The
// others took 45-90 s each (mixed at 15 s draws a single fault).
var skewedExpiryDrills = []struct {
	unsafeDrill
	ci bool
}{
	{unsafeDrill{"region-loss-transfer", 1, 20 * time.Second}, true},
	{unsafeDrill{"sql-partition", 4, 14 * time.Second}, true},
	{unsafeDrill{"mixed", 6, 15 * time.Second}, false},
	{unsafeDrill{"region-loss-reject", 1, 20 * time.Second}, false},
	{unsafeDrill{"etcd-leader-kill", 4, 15 * time.Second}, false},
}

// TestCheckerCatchesSecondEffectsOfSkewedExpiry runs every scenario the
// regional cluster supports, briefly and seeded, against a coordinator
// that trusts a clock running past every TTL (cluster.UnsafeSkewedExpiry):
// a retry of an acknowledged intent finds its record "expired", claims
// the key again under a new operation id, and the payments service and
// the bank execute it a second time. The checker, from the history, the
// store and the ledger alone, must fail each run with a second effect for
// one key: I1 (a second operation or payment) or I2 (a second charge),
// and its summary must print them with the seed. CI runs the subset
// marked ci (under two minutes under -race); IDEMCOORD_DRILL_UNSAFE_ALL=1
// runs all five.
func TestCheckerCatchesSecondEffectsOfSkewedExpiry(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a regional cluster per scenario")
	}
	for _, tt := range skewedExpiryDrills {
		t.Run(tt.scenario, func(t *testing.T) {
			if !tt.ci && os.Getenv(drillUnsafeAll) != "1" {
				t.Skipf("not in the CI subset; %s=1 runs it", drillUnsafeAll)
			}
			res, out, err := runUnsafe(t, tt.unsafeDrill, cluster.UnsafeSkewedExpiry)
			if !errors.Is(err, chaos.ErrViolations) {
				t.Fatalf("Drill(%s, seed %d, %s) = %v, want ErrViolations\n%s", tt.scenario, tt.seed,
					cluster.UnsafeSkewedExpiry, err, out)
			}
			i1, i2 := res.Verdict.Of(validate.I1), res.Verdict.Of(validate.I2)
			t.Logf("%s seed %d: %d I1, %d I2 violations, %d duplicates in the summary; first lines:\n%s",
				tt.scenario, tt.seed, len(i1), len(i2), res.Report.Duplicates, excerpt(out, 2))
			if len(i1)+len(i2) == 0 {
				t.Errorf("no I1 or I2 violation: the checker missed every second effect")
			}
			for _, want := range []string{fmt.Sprintf("VIOLATION seed=%d I1", tt.seed), fmt.Sprintf("VIOLATION seed=%d I2", tt.seed)} {
				if !strings.Contains(out, want) {
					t.Errorf("the summary lacks %q", want)
				}
			}
		})
	}
}

// runUnsafe runs d in mode and returns the result, the printed summary
// and the drill's error.
func runUnsafe(t *testing.T, d unsafeDrill, mode string) (chaos.Result, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d.duration+3*time.Minute)
	defer cancel()
	var out strings.Builder
	res, err := chaos.Drill(ctx, chaos.DrillConfig{Scenario: d.scenario, Seed: d.seed, Duration: d.duration,
		Start: cluster.StartRegional, Unsafe: mode, Out: &out})
	return res, out.String(), err
}

// excerpt returns the summary's verdict line and, for I1 and I2, its
// first n violation lines each with the history lines under it.
func excerpt(summary string, n int) string {
	var b strings.Builder
	lines := strings.Split(summary, "\n")
	shown := map[string]int{}
	for i, l := range lines {
		if strings.HasPrefix(l, "drill ") {
			b.WriteString(l + "\n")
		}
		inv, ok := "", false
		if f := strings.Fields(l); len(f) > 2 && f[0] == "VIOLATION" {
			inv, ok = f[2], f[2] == string(validate.I1) || f[2] == string(validate.I2)
		}
		if !ok || shown[inv] >= n {
			continue
		}
		shown[inv]++
		b.WriteString(l + "\n")
		for _, h := range lines[i+1:] {
			if !strings.HasPrefix(h, "    ") {
				break
			}
			b.WriteString(h + "\n")
		}
	}
	return b.String()
}
