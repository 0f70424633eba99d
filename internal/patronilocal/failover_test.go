package patronilocal_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/internal/etcdtest"
	"github.com/idemcoord/idemcoord/internal/patronilocal"
	"github.com/idemcoord/idemcoord/internal/patronitest"
)

// Rounds of TestStoreFailoverLosesNoAcknowledgedWriteAndFailsNoHeldRequest:
// CI runs one kill, two planned switchovers (docs/runbook.md: both
// standbys synchronous for its length) and no bare one; the figures in
// docs/store-ha.md come from IDEMCOORD_STORE_FAILOVER_KILLS=10,
// IDEMCOORD_STORE_FAILOVER_SWITCHOVERS=20 and, for the comparison,
// IDEMCOORD_STORE_FAILOVER_BARE_SWITCHOVERS=20 (a `patronictl switchover`
// with one synchronous standby, as the cluster stands).
func rounds(t *testing.T, env string, def int) int {
	v := os.Getenv(env)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a count", env, v)
	}
	return n
}

// TestStoreFailoverLosesNoAcknowledgedWriteAndFailsNoHeldRequest kills the
// primary (SIGKILL of Patroni and PostgreSQL) and switches it over while a
// client writes through the multi-host DSN, holding each request until it
// is acknowledged: no acknowledged row is lost, no held request fails, and
// each round's phases (leader key expiry, election, promotion, first
// commit) are logged with their p50/p99.
func TestStoreFailoverLosesNoAcknowledgedWriteAndFailsNoHeldRequest(t *testing.T) {
	kills := rounds(t, "IDEMCOORD_STORE_FAILOVER_KILLS", 1)
	switchovers := rounds(t, "IDEMCOORD_STORE_FAILOVER_SWITCHOVERS", 2)
	bare := rounds(t, "IDEMCOORD_STORE_FAILOVER_BARE_SWITCHOVERS", 0)
	// IDEMCOORD_STORE_FAILOVER_QUORUM=1 runs the cluster in quorum commit,
	// as deploy/patroni, the dev cluster and the drills do (the figures of
	// docs/store-ha.md's "Quorum commit"); its switchovers need no
	// synchronous_node_count change first (any standby may be the
	// candidate), so run them as bare ones.
	quorum := rounds(t, "IDEMCOORD_STORE_FAILOVER_QUORUM", 0) == 1
	c := patronitest.Start(t, patronitest.WithConfig(func(c *patronilocal.Config) { c.Quorum = quorum }))
	cli := etcdtest.Client(t, etcdtest.Cluster(t).Endpoints())
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(kills+switchovers+bare+2)*3*time.Minute)
	defer cancel()
	// Held up to a minute: longer than an unplanned failover (ttl 20 s
	// plus promotion), so a failed request is a defect, not the wait.
	w, err := patronitest.StartWriter(ctx, c.DSN(), time.Minute, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	var sw, bw []patronitest.KillTiming
	for i := range switchovers {
		st, err := patronitest.MeasureSwitchover(ctx, c, cli, w, true)
		if err != nil {
			t.Fatalf("switchover %d: %v", i+1, err)
		}
		t.Logf("switchover %d: %+v", i+1, st)
		sw = append(sw, st)
	}
	for i := range bare {
		st, err := patronitest.MeasureSwitchover(ctx, c, cli, w, false)
		if err != nil {
			t.Fatalf("bare switchover %d: %v", i+1, err)
		}
		t.Logf("bare switchover %d: %+v", i+1, st)
		bw = append(bw, st)
	}
	var kts []patronitest.KillTiming
	for i := range kills {
		kt, err := patronitest.MeasureKill(ctx, c, cli, w)
		if err != nil {
			t.Fatalf("kill %d: %v", i+1, err)
		}
		t.Logf("kill %d: %+v", i+1, kt)
		kts = append(kts, kt)
		// The killed member rejoined (MeasureKill restarted it) on the new
		// primary's timeline: pg_rewind cut its own history off.
		ms, err := c.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var leaderTL int
		for _, m := range ms {
			if m.Role == patronilocal.RoleLeader {
				leaderTL = m.Timeline
			}
		}
		for _, m := range ms {
			if m.State != patronilocal.StateRunning && m.State != patronilocal.StateStreaming || m.Timeline != leaderTL {
				t.Errorf("after kill %d member %+v is not streaming on the primary's timeline %d", i+1, m, leaderTL)
			}
		}
	}
	if _, ok := w.FirstAckAfter(ctx, time.Now(), "", time.Minute); !ok {
		t.Fatal("no write acknowledged after the last round")
	}
	w.Stop()

	acks := w.Acks()
	lost, err := patronitest.Lost(ctx, c.DSN(), acks)
	if err != nil {
		t.Fatal(err)
	}
	if len(lost) != 0 || w.Failed() != 0 {
		t.Errorf("%d of %d acknowledged rows lost (%v), %d held requests failed; want none", len(lost), len(acks), lost, w.Failed())
	}
	var held []time.Duration
	for _, a := range acks {
		held = append(held, a.At.Sub(a.Start))
	}
	t.Logf("%d requests acknowledged, longest held %.2f s", len(acks), longest(held).Seconds())
	if len(sw) > 0 {
		t.Logf("planned switchover (both standbys synchronous, then POST /switchover):\n%s", patronitest.Report(sw))
	}
	if len(bw) > 0 {
		t.Logf("bare switchover (one synchronous standby, POST /switchover):\n%s", patronitest.Report(bw))
	}
	if len(kts) > 0 {
		t.Logf("unplanned primary loss (SIGKILL), ttl %v, loop_wait %v:\n%s", patronilocal.DefaultTTL, patronilocal.DefaultLoopWait, patronitest.Report(kts))
	}
}

func longest(ds []time.Duration) time.Duration { return patronitest.Percentile(ds, 100) }
