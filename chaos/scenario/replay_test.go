package scenario

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/chaos/failpoint"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/schedules.golden from the current planner")

// TestASeedReplaysTheSameFaultsAcrossVersions plans every shipped
// scenario, and a spec drawing from every fault kind, for seeds 1-3 over
// the scenario's duration and the lengths CI and longer runs use, and
// compares the schedules with testdata/schedules.golden: a seed printed
// by an old run must replay the same faults at the same offsets with the
// same parameters. A change of the planner or the fault registry that
// changes a draw fails it (regenerate with -update only when that is the
// point of the change).
func TestASeedReplaysTheSameFaultsAcrossVersions(t *testing.T) {
	var b strings.Builder
	for _, name := range Names() {
		s, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []time.Duration{s.Duration, 20 * time.Second, 2 * time.Minute} {
			writeSchedules(t, &b, fmt.Sprintf("%s over %v", name, d), s.FaultSpec(d))
		}
	}
	// The kinds of 2026-12 by name, not failpoint.Kinds: a kind added
	// later changes what a spec drawing from every kind draws.
	kinds := []failpoint.Kind{"kill_region", "pause_region", "cut_etcd", "cut_sql", "cut_both", "latency", "reset_peer",
		"kill_etcd_leader", "crash_point", "clock_skew", "cut_peer", "short_pause"}
	every := failpoint.Spec{Kinds: kinds, Count: 12, Regions: []string{"us-east", "eu-west", "ap-south"},
		Duration: 10 * time.Minute, Warmup: 30 * time.Second, Cooldown: time.Minute,
		MinFor: 500 * time.Millisecond, MaxFor: 20 * time.Second, Lease: 10 * time.Second}
	writeSchedules(t, &b, "every kind", every)
	const golden = "testdata/schedules.golden"
	if *updateGolden {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("schedules differ from %s (-want +got):\n%s", golden, diff)
	}
}

func writeSchedules(t *testing.T, b *strings.Builder, title string, spec failpoint.Spec) {
	t.Helper()
	for seed := uint64(1); seed <= 3; seed++ {
		sched, err := failpoint.Plan(spec, seed)
		if err != nil {
			t.Fatalf("%s seed %d: %v", title, seed, err)
		}
		fmt.Fprintf(b, "%s seed %d:\n", title, seed)
		for _, f := range sched.Faults {
			j, _ := json.Marshal(f)
			fmt.Fprintf(b, "  %s\n", j)
		}
	}
}
