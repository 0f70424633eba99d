package chaos_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/chaos"
	"github.com/idemcoord/idemcoord/chaos/cluster"
	"github.com/idemcoord/idemcoord/chaos/history"
	"github.com/idemcoord/idemcoord/chaos/probe"
	"github.com/idemcoord/idemcoord/deploy/haproxy"
)

// TestAnEntryModeDrillSendsEveryAttemptThroughTheGlobalEntryAndStaysGreen
// is `idemctl drill run --scenario region-loss-transfer --seed 1
// --client entry` on the in-process multi-region cluster: real HAProxy
// with deploy/haproxy's configuration in front of the regions, a region
// killed under load. Every attempt of the traffic goes to the entry
// (none to a region's own address; the drill's own probes do), the
// regions behind it serve them, the run is green (no duplicate, every
// invariant held, full coverage) and the report names the entry mode. .ci/run installs haproxy, so this runs in CI; it skips
// only on a machine without it.
func TestAnEntryModeDrillSendsEveryAttemptThroughTheGlobalEntryAndStaysGreen(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a multi-region cluster and HAProxy")
	}
	if _, err := haproxy.Binary(); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	res, err := chaos.Drill(ctx, chaos.DrillConfig{Scenario: "region-loss-transfer", Seed: 1, Duration: 20 * time.Second,
		Start: cluster.StartRegional, Out: io.Discard, Client: chaos.ClientEntry})
	logFigures(t, res.Report)
	if err != nil {
		t.Fatalf("Drill(region-loss-transfer, seed 1, entry) = %v, want green", err)
	}
	if res.Report.Client != chaos.ClientEntry {
		t.Errorf("report's client mode = %q, want %q", res.Report.Client, chaos.ClientEntry)
	}
	servedBy := map[string]int{}
	requests := 0
	for _, op := range res.History.Filter(history.KindRequest) {
		if op.ClientID == probe.ClientID {
			continue // the drill's own probes address each region themselves
		}
		requests++
		if op.SentTo != chaos.ClientEntry {
			t.Fatalf("an attempt went to %q, not through the global entry", op.SentTo)
		}
		if op.Acknowledged() {
			servedBy[op.ServedBy]++
		}
	}
	if requests == 0 || len(servedBy) < 2 {
		t.Errorf("%d attempts through the entry, successes served by %v; want successes from at least two regions", requests, servedBy)
	}
	if len(res.Report.Faults) == 0 {
		t.Errorf("no region-loss window in the report: %+v", res.Report.Faults)
	}
	// The availability classes need calls between the region's loss and
	// the end of the main phase; on a loaded machine the in-process kill
	// (a stop of the region's daemon) was seen to outlast the 20 s main
	// phase, leaving no classified call (CI, 2026-12-02). Logged, not
	// asserted: what the classes count is checked by chaos/report's tests.
	t.Logf("unaffected calls %d, affected calls %d", res.Report.Unaffected.Calls, res.Report.Affected.Calls)
}
