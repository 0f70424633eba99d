// Package storedrills_test runs the drills that kill the replicated store
// (PostgreSQL under Patroni). They are a package of their own so that
// their minutes count against their own go test timeout and run beside
// the other drills of package chaos, not after them.
package storedrills_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/chaos"
	"github.com/idemcoord/idemcoord/chaos/cluster"
	"github.com/idemcoord/idemcoord/chaos/report"
	"github.com/idemcoord/idemcoord/chaos/scenario"
	"github.com/idemcoord/idemcoord/chaos/validate"
	"github.com/idemcoord/idemcoord/internal/patronilocal"
)

// needPatroni skips a test of the replicated store where Patroni 4 is not
// installed (.ci/run installs it); any other problem fails it.
func needPatroni(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds idemd and starts a Patroni cluster and a process cluster")
	}
	if _, err := patronilocal.Version(context.Background()); errors.Is(err, patronilocal.ErrNotInstalled) {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
}

// storeDrill runs a shipped scenario on the replicated store for d in
// client mode mode and returns its result, failing the test when it could
// not run or when something ran twice, an acknowledged answer was lost, a
// stale epoch committed or a replay differed.
func storeDrill(t *testing.T, name string, seed uint64, d time.Duration, mode string) chaos.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d+5*time.Minute)
	defer cancel()
	res, err := chaos.Drill(ctx, chaos.DrillConfig{Scenario: name, Seed: seed, Duration: d,
		Start: cluster.StartProcesses, Out: io.Discard, Client: mode})
	logStoreFigures(t, res.Report)
	for _, e := range res.StageErrors {
		t.Logf("stage error: %v", e)
	}
	if err != nil && !errors.Is(err, chaos.ErrViolations) && !errors.Is(err, chaos.ErrNotCovered) &&
		!errors.Is(err, chaos.ErrOtherClustersBelowFloor) {
		t.Fatalf("Drill(%s, seed %d) could not run: %v", name, seed, err)
	}
	if err != nil {
		var b strings.Builder
		res.Report.WriteText(&b)
		t.Logf("Drill(%s, seed %d) = %v; summary:\n%.4000s", name, seed, err, b.String())
	}
	// What these tests prove: nothing ran twice and nothing acknowledged
	// was lost. Liveness is left to the drill table (every run green):
	// the intents once held at 409 after a store failover were the demo
	// upstream's (docs/drills.md), fixed and tested in demo/payments.
	for _, inv := range []validate.Invariant{validate.I1, validate.I2, validate.I3, validate.I5, validate.I7} {
		for _, v := range res.Verdict.Of(inv) {
			t.Errorf("Drill(%s, seed %d): %s", name, seed, v)
		}
	}
	return res
}

func logStoreFigures(t *testing.T, r report.Report) {
	t.Helper()
	t.Logf("figures %s seed %d: requests=%d acked=%d duplicates=%d region_failovers=%d",
		r.Scenario, r.Seed, r.Requests, r.Acked, r.Duplicates, r.RegionFailovers)
	t.Logf("figures %s seed %d: acked_replayed=%d acked_lost=%d store_failover_n=%d (unmeasured %d) p50=%v p99=%v zombies=%d rejoined=%d other_clusters=%s",
		r.Scenario, r.Seed, r.AckReplayed, r.AckedLost, r.StoreFailover.N, r.StoreFailoversUnmeasured,
		r.StoreFailover.P50, r.StoreFailover.P99, r.Zombies, r.ZombiesRejoined, r.OtherClusters)
}

// TestAZombieStorePrimaryNeverAcknowledgesAWriteAfterItsSuccessor runs
// store-failover briefly (its first fault: the primary of us-east's store
// cluster paused past its leader ttl, resumed once a standby was
// promoted) with the multi-region SDK: nothing ran twice, every
// acknowledged answer re-sent after the drill got back (acked_lost 0: a
// write the zombie acknowledged after its successor's promotion would
// have been rewound away), the failover measured, the zombie back as a
// standby, and the actors on the other home regions' clusters served.
func TestAZombieStorePrimaryNeverAcknowledgesAWriteAfterItsSuccessor(t *testing.T) {
	needPatroni(t)
	r := storeDrill(t, "store-failover", 1, 30*time.Second, chaos.ClientSDK).Report
	if r.AckReplayed == 0 || r.AckedLost != 0 {
		t.Errorf("acked answers re-sent %d, lost %d; want some re-sent and none lost", r.AckReplayed, r.AckedLost)
	}
	if r.Zombies != 1 || r.ZombiesRejoined != 1 || r.StoreFailover.N != 1 {
		t.Errorf("zombies %d (rejoined %d), store failovers measured %d; want 1, 1, 1", r.Zombies, r.ZombiesRejoined,
			r.StoreFailover.N)
	}
	// One Patroni cluster per home region: the zombie was us-east's, and
	// the actors whose shards live on eu-west's and ap-south's clusters
	// must not have noticed it.
	if r.OtherClusters.Calls == 0 || !r.OtherClustersMet() {
		t.Errorf("actors on the other store clusters during the failover: %s; want some calls, at least %.3f answered",
			r.OtherClusters, report.OtherClustersFloor)
	}
}

// TestAFullRegionLossKeepsEveryAcknowledgedAnswer runs region-loss-full
// briefly: the region holding the store's primary loses its idemd, its
// PostgreSQL member and its etcd member at once. Nothing ran twice, every
// acknowledged answer is what a retry gets after the drill, and the
// region's failover is audited. Three CI runs (2026-12-07) audited none:
// the shards had moved, but the controller's audit row goes to the audit
// cluster, by default the first region's, the one lost; it now goes to
// another cluster while that one is down (patronistore.Store.Audit).
func TestAFullRegionLossKeepsEveryAcknowledgedAnswer(t *testing.T) {
	needPatroni(t)
	r := storeDrill(t, "region-loss-full", 1, 30*time.Second, chaos.ClientSDK).Report
	if r.AckReplayed == 0 || r.AckedLost != 0 {
		t.Errorf("acked answers re-sent %d, lost %d; want some re-sent and none lost", r.AckReplayed, r.AckedLost)
	}
	if r.RegionFailovers == 0 {
		t.Errorf("no region failover audited (store cluster writable again %v after the loss); the lost region's shards move within seconds, and their failover must be on record",
			r.StoreFailover.Max)
	}
}

// asyncLoss is the unsafe-mode drill: one kill of the store's primary.
const asyncLoss = `
name: async-replication-loss
description: the store's primary is killed after its standbys were lost
policy: transfer
store: ha
duration: 30s
lease: 3s
probe_interval: 2s
traffic:
  actors: 24
  rate: 40
  cross_region_retry: 0.3
  duplicate_retry: 0.1
faults:
  kinds: [kill_store_primary]
  count: 1
  regions: [us-east]
  warmup: 8s
  cooldown: 5s
  min_for: 3s
  max_for: 5s
`

// TestCheckerCatchesAcknowledgedWritesLostToAsyncReplication runs the
// replicated store in the unsafe mode async-replication (synchronous
// replication off; the primary's standbys lost for a few seconds before
// it is killed): the promoted standby lacks writes the coordinator
// acknowledged, and the old primary's rewind discards them. The drill
// must be red with acked_lost > 0 (I7), in the sdk client mode.
func TestCheckerCatchesAcknowledgedWritesLostToAsyncReplication(t *testing.T) {
	needPatroni(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	sc, err := scenario.Parse([]byte(asyncLoss))
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.StartProcesses(ctx, cluster.Options{Policy: string(sc.Policy), Lease: sc.Lease, Store: sc.Store,
		Unsafe: cluster.UnsafeAsyncReplication})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(context.Background())
	res, err := chaos.Run(ctx, sc, 1, c, chaos.Options{Client: chaos.ClientSDK})
	if err != nil {
		t.Fatal(err)
	}
	logStoreFigures(t, res.Report)
	if err := res.Err(); !errors.Is(err, chaos.ErrViolations) {
		t.Fatalf("Err() = %v, want ErrViolations", err)
	}
	if res.Report.AckedLost == 0 || len(res.Verdict.Of(validate.I7)) == 0 {
		t.Errorf("acked_lost %d, I7 violations %d; want both above 0", res.Report.AckedLost, len(res.Verdict.Of(validate.I7)))
	}
}
