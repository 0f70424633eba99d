package failover_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/internal/etcdtest"
	"github.com/idemcoord/idemcoord/ownership"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestFailoverFailbackAndDrainRideOutEtcdTimeouts: on a busy etcd that
// times out every other transaction ("etcdserver: request timed out"),
// alternately before it ran and after it was applied, an operator's
// failover, failback and drain of a region each move every shard once
// (one epoch, one fence bump, two writes of its key per move) instead of
// failing halfway and leaving shards FENCING. The failover and failback
// go through the batched writes, the drain shard by shard.
func TestFailoverFailbackAndDrainRideOutEtcdTimeouts(t *testing.T) {
	ctx := ctxT(t)
	e := setup(t)
	busy, txns := busyEtcd(t)
	r := repair(e)
	r.Directory = ownership.NewDirectory(busy, e.store, ownership.WithPrefix(e.pfx), ownership.WithLogger(quiet()))
	want := map[int]ownership.Entry{}
	writes := map[int]int64{} // shard -> its key's version
	for s := range shards {
		want[s] = entry(s, e.topo.Home(s), 1, ownership.Active)
		writes[s] = 1
	}
	fences := 0
	check := func(stage string, moved []int) {
		t.Helper()
		for _, s := range moved {
			writes[s] += 2
		}
		fences += len(moved)
		got := owners(t, e)
		for s := range shards {
			if got[s] != want[s] {
				t.Errorf("%s: shard %d is %s, want %s", stage, s, got[s], want[s])
			}
			resp, err := e.cli.Get(ctx, fmt.Sprintf("%sshards/%05d", e.pfx, s))
			if err != nil {
				t.Fatal(err)
			}
			if v := resp.Kvs[0].Version; v != writes[s] {
				t.Errorf("%s: shard %d's key has version %d, want %d (two writes per move)", stage, s, v, writes[s])
			}
		}
		if n := len(audit(t, e.store, "move_fence")); n != fences {
			t.Errorf("%s: %d audited fence moves, want %d (one per move)", stage, n, fences)
		}
	}
	usEast := []int{0, 3, 6, 9}
	if _, err := r.Failover(ctx, "us-east", "oncall", "us-east down"); err != nil {
		t.Fatalf("failover on a busy etcd: %v", err)
	}
	for _, s := range usEast {
		want[s] = entry(s, "eu-west", 2, ownership.FailedOver)
	}
	check("failover", usEast)
	if _, err := r.Failback(ctx, "us-east", "oncall", "us-east back"); err != nil {
		t.Fatalf("failback on a busy etcd: %v", err)
	}
	for _, s := range usEast {
		want[s] = entry(s, "us-east", 3, ownership.Active)
	}
	check("failback", usEast)
	r.DrainTimeout = time.Second // shard by shard
	if _, err := r.Drain(ctx, "eu-west", "oncall", "eu-west maintenance"); err != nil {
		t.Fatalf("drain on a busy etcd: %v", err)
	}
	euWest := []int{1, 4, 7, 10}
	for _, s := range euWest {
		want[s] = entry(s, "ap-south", 2, ownership.Active)
	}
	check("drain", euWest)
	if n := txns.Load(); n < 8 {
		t.Fatalf("%d transactions: the injected timeouts did not happen", n)
	}
}

// TestTheControllerFailsARegionOverInOnePassOnABusyEtcd: the failover
// controller's moves ride out etcd timing out every other transaction
// (before it ran or after it was applied): its first pass moves every
// shard of the failed region once, audited as one region failover of all
// of them, instead of failing shards and leaving them to later passes.
func TestTheControllerFailsARegionOverInOnePassOnABusyEtcd(t *testing.T) {
	e := setup(t)
	live := everyRegion(t, e)
	fake := clock.NewFake(epoch0())
	busy, txns := busyEtcd(t)
	dir := ownership.NewDirectory(busy, e.store, ownership.WithPrefix(e.pfx), ownership.WithLogger(quiet()))
	c := start(t, e, "c1", fake, func(cfg *failover.Config) { cfg.Directory = dir })
	eventually(t, "c1 to lead and see every region healthy", nil, func() bool {
		st := c.States()
		return c.Leading() && st["us-east"] == failover.Healthy && st["eu-west"] == failover.Healthy && st["ap-south"] == failover.Healthy
	})
	live["us-east"].kill()
	eventually(t, "us-east to fail over", func() { fake.Advance(failover.DefaultPollInterval) }, func() bool {
		return len(audit(t, e.store, "region_failover")) > 0
	})
	rows := audit(t, e.store, "region_failover")
	if len(rows) != 1 || !strings.Contains(rows[0].Detail, "shards_moved=4 of 4") {
		var details []string
		for _, r := range rows {
			details = append(details, r.Detail)
		}
		t.Fatalf("region failovers audited: %q, want one that moved all 4 of us-east's shards", details)
	}
	for _, en := range agree(t, e) {
		if e.topo.Home(en.Shard) == "us-east" && (en.Owner != "eu-west" || en.Epoch != 2 || en.State != ownership.FailedOver) {
			t.Errorf("shard %d: %s, want eu-west at epoch 2 FAILED_OVER", en.Shard, en)
		}
	}
	if n := len(audit(t, e.store, "move_fence")); n != 4 {
		t.Errorf("%d audited fence moves, want 4 (one per us-east shard)", n)
	}
	if n := txns.Load(); n < 4 {
		t.Fatalf("%d transactions: the injected timeouts did not happen", n)
	}
}

// busyEtcd is a client of the test cluster whose every other transaction
// times out ("etcdserver: request timed out"), alternately before it ran
// and after it was applied, and the count of transactions it sent.
func busyEtcd(t *testing.T) (*clientv3.Client, *atomic.Int64) {
	txns := new(atomic.Int64)
	return etcdtest.Client(t, cluster(t).Endpoints(), etcdtest.TxnFaults(txns, func(n int64) etcdtest.Fault {
		switch n % 4 {
		case 1:
			return etcdtest.LostBefore
		case 3:
			return etcdtest.LostAfter
		}
		return etcdtest.Pass
	})), txns
}
