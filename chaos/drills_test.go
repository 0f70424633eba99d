package chaos_test

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/chaos"
	"github.com/idemcoord/idemcoord/chaos/cluster"
	"github.com/idemcoord/idemcoord/chaos/report"
)

// drillLong, when set to 1, makes TestShippedScenariosAreGreenOnTheProcessCluster
// run mixed for ten minutes instead of the short seeded set.
const drillLong = "IDEMCOORD_DRILL_LONG"

// drillCase is one seeded drill of a shipped scenario.
type drillCase struct {
	scenario string
	seed     uint64
	duration time.Duration
}

// TestShippedScenariosAreGreenOnTheProcessCluster runs every shipped
// scenario briefly, seeded, on the process-level cluster (an idemd
// process per region built with -tags drill, every link through its own
// proxy): each must be green, every invariant held and the coverage saw
// a stale-epoch write rejected, a takeover, a 40001 retry, an ambiguous
// outcome resolved and a move under load.
func TestShippedScenariosAreGreenOnTheProcessCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds idemd and starts a process cluster per scenario")
	}
	tests := []drillCase{
		// Seeds and lengths are chosen so each run's schedule holds the
		// scenario's main fault and, where the scenario pairs it with a
		// region loss (sql-partition, etcd-partition), that loss too: a
		// 20 s run has room for one fault, a 30 s run for two.
		{"region-loss-transfer", 1, 20 * time.Second},
		{"region-loss-reject", 1, 20 * time.Second},
		{"sql-partition", 4, 30 * time.Second},    // cut_sql, kill_region
		{"etcd-leader-kill", 4, 20 * time.Second}, // kill_etcd_leader
		{"etcd-partition", 1, 30 * time.Second},   // cut_etcd, kill_region
		{"zombie-pause", 1, 20 * time.Second},
		{"crash-points", 6, 20 * time.Second}, // after_upstream
		{"mixed", 6, 30 * time.Second},        // reset_peer sql, then a region fault
	}
	if os.Getenv(drillLong) == "1" {
		tests = []drillCase{{"mixed", 6, 10 * time.Minute}}
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			if _, err := drill(t, tt, cluster.StartProcesses); err != nil {
				t.Errorf("Drill(%s, seed %d) = %v, want green", tt.scenario, tt.seed, err)
			}
		})
	}
}

// TestShippedScenariosHoldOnTheRegionalCluster runs, on the in-process
// multi-region cluster (cluster.StartRegional), the scenario the unsafe
// test is measured against: it must be green there too. The others run
// on the process cluster, which supports every fault family.
func TestShippedScenariosHoldOnTheRegionalCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dev cluster")
	}
	tt := drillCase{"region-loss-transfer", 1, 25 * time.Second}
	if _, err := drill(t, tt, cluster.StartRegional); err != nil {
		t.Errorf("Drill(%s, seed %d) = %v, want green", tt.scenario, tt.seed, err)
	}
}

// drill runs tt on a cluster start starts and logs its figures and, when
// it is not green, its summary.
func drill(t *testing.T, tt drillCase, start cluster.Starter) (chaos.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), tt.duration+4*time.Minute)
	defer cancel()
	res, err := chaos.Drill(ctx, chaos.DrillConfig{Scenario: tt.scenario, Seed: tt.seed, Duration: tt.duration,
		Start: start, Out: io.Discard})
	logFigures(t, res.Report)
	for _, e := range res.StageErrors {
		t.Logf("stage error: %v", e)
	}
	if err != nil && !errors.Is(err, chaos.ErrViolations) && !errors.Is(err, chaos.ErrNotCovered) {
		t.Fatalf("Drill(%s, seed %d) could not run: %v", tt.scenario, tt.seed, err)
	}
	if err != nil {
		var b strings.Builder
		res.Report.WriteText(&b)
		t.Logf("summary:\n%.4000s", b.String())
	}
	return res, err
}

// logFigures logs a run's figures: requests, acknowledged successes,
// duplicates, stale writes rejected, takeovers, failover time and
// availability, over the run and during each fault window.
func logFigures(t *testing.T, r report.Report) {
	t.Helper()
	avail := 0.0
	if r.Requests > 0 {
		avail = float64(r.Acked) / float64(r.Requests)
	}
	t.Logf("figures %s seed %d: requests=%d acked=%d duplicates=%d stale_rejected=%d takeovers=%d retries_40001=%d "+
		"ambiguous_resolved=%d moves_under_load=%d failover_n=%d failover_p50=%v failover_p99=%v availability=%.3f",
		r.Scenario, r.Seed, r.Requests, r.Acked, r.Duplicates, r.Coverage.StaleEpochRejected, r.Coverage.Takeovers,
		r.Coverage.Retries40001, r.Coverage.AmbiguousResolved, r.Coverage.MovesUnderLoad,
		r.Failover.N, r.Failover.P50, r.Failover.P99, avail)
	for _, f := range r.Faults {
		during := 0.0
		if f.Requests > 0 {
			during = float64(f.Acked) / float64(f.Requests)
		}
		t.Logf("figures %s fault %s [%.1fs, %.1fs]: requests=%d acked=%d rejected_503=%d (without Retry-After %d) availability=%.3f",
			r.Scenario, f.What, f.From, f.To, f.Requests, f.Acked, f.Rejected, f.RejectedNoRetryAfter, during)
	}
}
