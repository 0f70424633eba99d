package chaos_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/chaos"
	"github.com/idemcoord/idemcoord/chaos/cluster"
	"github.com/idemcoord/idemcoord/chaos/scenario"
)

// quiet is a drill whose faults never disturb anything: whatever the seed,
// the coordinator sees no ambiguity, no dead worker and no move unless the
// drill provokes them.
const quiet = `name: quiet
description: traffic and probes, no fault
policy: transfer
duration: 8s
lease: 3s
probe_interval: 1s
traffic:
  actors: 8
  rate: 40
faults:
  count: 0
`

// TestDrillProvokesWhatItsVerdictNeedsWithoutAnyFault runs a drill with no
// fault on the in-process multi-region cluster: its coverage must still
// hold an ambiguous outcome resolved, a takeover and a move under load,
// which the drill provoked itself, so that a green verdict never depends
// on what a seed's faults happened to hit.
func TestDrillProvokesWhatItsVerdictNeedsWithoutAnyFault(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dev cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sc, err := scenario.Parse([]byte(quiet))
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.StartRegional(ctx, cluster.Options{Policy: string(sc.Policy), Lease: sc.Lease})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(context.Background())
	res, err := chaos.Run(ctx, sc, 3, c, chaos.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res.StageErrors {
		t.Logf("stage error: %v", e)
	}
	cov := res.Verdict.Coverage
	if cov.AmbiguousResolved == 0 || cov.Takeovers == 0 || cov.MovesUnderLoad == 0 {
		t.Errorf("coverage %+v: want an ambiguous outcome resolved, a takeover and a move under load", cov)
	}
	if err := res.Err(); err != nil {
		t.Errorf("Err() = %v, want green: %v", err, res.Verdict.Violations)
	}
}
