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

// drillLong, when set to 1, makes TestShippedScenariosHoldOnTheRegionalCluster
// run mixed for ten minutes instead of the short seeded set.
const drillLong = "IDEMCOORD_DRILL_LONG"

// TestShippedScenariosHoldOnTheRegionalCluster runs every shipped scenario
// briefly, seeded, on the in-process multi-region cluster: those whose
// faults the cluster supports must be green (every invariant held and
// the coverage saw a stale-epoch write rejected, a takeover, a 40001
// retry, an ambiguous outcome resolved and a move under load); the others
// (a zombie pause, etcd partitions, crash points, which need the
// process-level cluster) must at least be safe.
func TestShippedScenariosHoldOnTheRegionalCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dev cluster per scenario")
	}
	tests := []struct {
		scenario string
		seed     uint64
		duration time.Duration
		green    bool
	}{
		{"region-loss-transfer", 1, 25 * time.Second, true},
		{"region-loss-reject", 1, 25 * time.Second, true},
		{"sql-partition", 4, 30 * time.Second, true},
		{"etcd-leader-kill", 4, 30 * time.Second, true},
		{"mixed", 6, 30 * time.Second, true},
		{"zombie-pause", 1, 20 * time.Second, false},
		{"etcd-partition", 1, 20 * time.Second, false},
		{"crash-points", 1, 20 * time.Second, false},
	}
	if os.Getenv(drillLong) == "1" {
		tests = tests[4:5]
		tests[0].duration = 10 * time.Minute
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tt.duration+3*time.Minute)
			defer cancel()
			res, err := chaos.Drill(ctx, chaos.DrillConfig{Scenario: tt.scenario, Seed: tt.seed, Duration: tt.duration,
				Start: cluster.StartRegional, Out: io.Discard})
			logFigures(t, res.Report)
			for _, e := range res.StageErrors {
				t.Logf("stage error: %v", e)
			}
			switch {
			case tt.green && err != nil:
				t.Errorf("Drill(%s, seed %d) = %v, want green", tt.scenario, tt.seed, err)
			case !tt.green && (errors.Is(err, chaos.ErrViolations) || (err != nil && !errors.Is(err, chaos.ErrNotCovered))):
				t.Errorf("Drill(%s, seed %d) = %v, want safe", tt.scenario, tt.seed, err)
			}
			if err != nil {
				var b strings.Builder
				res.Report.WriteText(&b)
				t.Logf("summary:\n%.4000s", b.String())
			}
		})
	}
}

// logFigures logs a run's figures: requests, acknowledged successes,
// duplicates, stale writes rejected, takeovers, failover time and
// availability.
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
}
