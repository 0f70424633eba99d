package chaos_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/chaos"
	"github.com/idemcoord/idemcoord/chaos/cluster"
	"github.com/idemcoord/idemcoord/chaos/history"
	"github.com/idemcoord/idemcoord/chaos/validate"
)

// TestDrillRunsAShippedScenarioAndWritesItsFiles is `idemctl drill run
// --scenario sql-partition --seed 3 --duration 15s` on the dev cluster,
// which cannot cut SQL: the fault is recorded as not injected, the run is
// safe but not green, and the summary, report and history are written.
func TestDrillRunsAShippedScenarioAndWritesItsFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dev cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	var out bytes.Buffer
	res, err := chaos.Drill(ctx, chaos.DrillConfig{Scenario: "sql-partition", Seed: 3, Duration: 15 * time.Second,
		ReportPath: filepath.Join(dir, "r.html"), HistoryPath: filepath.Join(dir, "h.jsonl"),
		Start: cluster.StartDev, Out: &out,
		Command: "idemctl drill run --scenario sql-partition --seed 3 --duration 15s", Cluster: "inprocess",
		// The dev cluster does not assign shard owners on this branch.
		Validate: validate.Options{AllowUnownedShards: true}})
	t.Logf("output:\n%.2500s", out.String())
	if !errors.Is(err, chaos.ErrNotCovered) {
		t.Fatalf("Drill = %v, want ErrNotCovered (safe, but no move or takeover on the dev cluster)", err)
	}
	if !strings.Contains(out.String(), "drill sql-partition seed 3:") || !strings.Contains(out.String(), "requests") {
		t.Errorf("no progress or summary printed")
	}
	faults := res.History.Filter(history.KindFault)
	if len(faults) == 0 || !faults[0].Skipped || len(res.Report.Faults[0].Failover) != 0 {
		t.Errorf("fault windows %+v: want the SQL cut recorded as not injected", faults)
	}
	page, err := os.ReadFile(filepath.Join(dir, "r.html"))
	if err != nil || !bytes.Contains(page, []byte(`id="invariants"`)) {
		t.Errorf("report file: %v", err)
	}
	// The run says where the report went; its header has the command to
	// paste and the kind of cluster, not the test binary's path.
	if want := "report written to " + filepath.Join(dir, "r.html") + "\n"; !strings.Contains(out.String(), want) {
		t.Errorf("output does not say %q", want)
	}
	for _, want := range []string{"idemctl drill run --scenario sql-partition --seed 3 --duration 15s", "inprocess: the regions in"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("report header lacks %q", want)
		}
	}
	f, err := os.Open(filepath.Join(dir, "h.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := history.ReadJSONL(f)
	if err != nil || len(h.Ops) != len(res.History.Ops) {
		t.Errorf("history file: %d operations (%v), want %d", len(h.Ops), err, len(res.History.Ops))
	}
}
