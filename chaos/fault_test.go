package chaos_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/chaos"
	"github.com/idemcoord/idemcoord/chaos/cluster"
	"github.com/idemcoord/idemcoord/chaos/scenario"
	"github.com/idemcoord/idemcoord/chaos/validate"
)

const upstreamReset = `name: upstream-reset
description: the gateways' answers from payments are lost after the charge ran
policy: reject
duration: 12s
lease: 30s
probe_interval: 2s
traffic:
  actors: 4
  rate: 12
  cross_region_retry: 0.5
  duplicate_retry: 0.2
  changed_body: 0.1
faults:
  kinds: [reset_peer]
  links: [upstream]
  count: 1
  regions: [us-east]
  warmup: 3s
  cooldown: 4s
  min_for: 2s
  max_for: 3s
`

// TestLostUpstreamAnswersNeverChargeTwice resets the gateways' upstream
// link on the dev cluster while traffic runs: payments run, their answers
// are lost, the gateways hold unknown outcomes, the clients retry. The
// checker, from the history and the ledger only, must find no second
// charge and no lost acknowledgement, and see the ambiguities resolved.
func TestLostUpstreamAnswersNeverChargeTwice(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dev cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sc, err := scenario.Parse([]byte(upstreamReset))
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.StartDev(ctx, cluster.Options{Policy: string(sc.Policy), Lease: sc.Lease})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(context.Background())
	res, err := chaos.Run(ctx, sc, 5, c, chaos.Options{Validate: validate.Options{AllowUnownedShards: true}})
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	res.Report.WriteText(&text)
	t.Logf("summary:\n%s", text.String())
	for _, e := range res.StageErrors {
		t.Logf("stage error: %v", e)
	}
	if !res.Verdict.Safe() {
		t.Fatalf("violations:\n%s", text.String())
	}
	if len(res.Report.Faults) != 1 || res.Report.Faults[0].Requests == 0 {
		t.Fatalf("the reset window saw no traffic: %+v", res.Report.Faults)
	}
	if res.Verdict.Coverage.AmbiguousResolved == 0 {
		t.Errorf("no ambiguous outcome was resolved: the reset did not hit a request that ran")
	}
}
