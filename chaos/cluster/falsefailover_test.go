package cluster

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/chaos/failpoint"
	"github.com/idemcoord/idemcoord/chaos/validate"
	"github.com/idemcoord/idemcoord/ownership"
)

// falseFailoverSettle is how long the test lets the other regions react
// after a fault healed before it reads the directory: longer than the
// default liveness TTL plus the confirmation delay, so a failover the
// fault caused has committed its moves by then.
const falseFailoverSettle = ownership.DefaultLivenessTTL + 2*time.Second

// TestTheDefaultTimingsFailNoRegionOverThatIsOnlySlowPartitionedFromAPeerOrBrieflyPaused
// runs the process cluster at the product's default failure detection
// (liveness TTL 2 s, keepalives every TTL/6, confirmation 500 ms) and
// injects, one after the other, into one region: latency of 600 ms ±
// 150 ms on its etcd, SQL and peer links (three times the drills' worst)
// for 6 s; a cut of its links to one other region, both ways, for 6 s;
// a SIGSTOP of 1.2 s, under its 1.67 s pause budget (TTL - TTL/6). After
// each, no shard may have moved: the count of false failovers is 0.
func TestTheDefaultTimingsFailNoRegionOverThatIsOnlySlowPartitionedFromAPeerOrBrieflyPaused(t *testing.T) {
	ctx, p := transferCluster(t)
	const victim, peer = "eu-west", "ap-south"
	before := directory(t, ctx, p)
	faults := []struct {
		name         string
		inject, heal func() error
		hold         time.Duration
	}{
		{"slow etcd, SQL and peer links", func() error {
			for _, l := range []failpoint.Link{failpoint.LinkEtcd, failpoint.LinkSQL, failpoint.LinkPeer} {
				if err := p.Slow(ctx, victim, l, 600*time.Millisecond, 150*time.Millisecond); err != nil {
					return err
				}
			}
			return nil
		}, func() error {
			for _, l := range []failpoint.Link{failpoint.LinkEtcd, failpoint.LinkSQL, failpoint.LinkPeer} {
				if err := p.Restore(ctx, victim, l); err != nil {
					return err
				}
			}
			return nil
		}, 6 * time.Second},
		{"partitioned from one peer region", func() error {
			if err := p.CutTo(ctx, victim, failpoint.LinkPeer, peer); err != nil {
				return err
			}
			return p.CutTo(ctx, peer, failpoint.LinkPeer, victim)
		}, func() error {
			if err := p.RestoreTo(ctx, victim, failpoint.LinkPeer, peer); err != nil {
				return err
			}
			return p.RestoreTo(ctx, peer, failpoint.LinkPeer, victim)
		}, 6 * time.Second},
		{"paused under its budget", func() error { return p.Pause(ctx, victim) },
			func() error { return p.Resume(ctx, victim) }, 1200 * time.Millisecond},
	}
	// registered is the victim's instances by name, at their liveness
	// keys' create revisions: a key registered again has a new one.
	registered := func() map[string]int64 {
		ins, err := ownership.Instances(ctx, p.cli, ownership.DefaultPrefix, victim)
		if err != nil {
			t.Fatal(err)
		}
		if len(ins) == 0 {
			t.Fatalf("%s has no liveness key", victim)
		}
		out := map[string]int64{}
		for _, i := range ins {
			out[i.Name] = i.CreateRevision
		}
		return out
	}
	falseFailovers := 0
	for _, f := range faults {
		keys := registered()
		if err := f.inject(); err != nil {
			t.Fatalf("%s: inject: %v", f.name, err)
		}
		time.Sleep(f.hold) // the fault's length, not a wait for a lease
		if err := f.heal(); err != nil {
			t.Fatalf("%s: heal: %v", f.name, err)
		}
		time.Sleep(falseFailoverSettle) // room for a failover the fault caused to show
		after := directory(t, ctx, p)
		moved := 0
		for shard, e := range after {
			if b := before[shard]; e.Epoch != b.Epoch || e.Owner != b.Owner {
				moved++
			}
		}
		if moved > 0 {
			falseFailovers++
			t.Errorf("%s: %d shards moved; want none (a false failover)", f.name, moved)
		}
		t.Logf("%s: %d shards moved", f.name, moved)
		before = after
		// A stall under the pause budget keeps the lease, so the instance
		// keeps its key: before, it dropped its own live lease once its
		// session's stream had gone a TTL without an answer, and its
		// region was suspect for a moment.
		if now := registered(); f.name == "paused under its budget" && !maps.Equal(now, keys) {
			t.Errorf("%s: %s's liveness keys %v, before the pause %v; want the same keys (no lease lost)", f.name, victim, now, keys)
		}
	}
	t.Logf("false failovers: %d of %d faults", falseFailovers, len(faults))
}

// transferCluster starts the process cluster at the product's defaults
// with the transfer policy, for five minutes at most (ctx), and stops it
// when t ends; it skips t in -short mode.
func transferCluster(t *testing.T) (context.Context, *Process) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds idemd and starts a process cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	p, err := startProcesses(ctx, ProcessConfig{}, Options{Policy: "transfer"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(context.WithoutCancel(ctx)) })
	return ctx, p
}

func directory(t *testing.T, ctx context.Context, p *Process) map[int]validate.DirectoryEntry {
	t.Helper()
	d, err := p.Directory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
