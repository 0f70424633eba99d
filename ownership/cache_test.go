package ownership_test

import (
	"context"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idemcoord/idemcoord/internal/etcdlocal"
	"github.com/idemcoord/idemcoord/internal/toxitest"
	"github.com/idemcoord/idemcoord/ownership"
)

// sameAsDirectory fails unless the cache holds exactly what the
// directory lists.
func sameAsDirectory(t *testing.T, d *ownership.Directory, c *ownership.Cache) {
	t.Helper()
	entries, rev, err := d.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitRevision(ctxT(t), rev); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		got, ok := c.Lookup(e.Shard)
		if !ok || got.Owner != e.Owner || got.Epoch != e.Epoch || got.State != e.State {
			t.Errorf("cache shard %d: %s (found %v), directory %s", e.Shard, got, ok, e)
		}
	}
}

func TestCacheLookupsMakeNoEtcdCalls(t *testing.T) {
	ctx := ctxT(t)
	const shards = 64
	d, _, _ := setup(t, shards)
	var calls ownership.CallCounter
	c, err := openCache(ctx, ownership.CacheConfig{Client: client(t, cluster(t).Endpoints(), calls.DialOptions()...),
		Prefix: prefix(t), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if calls.Calls() == 0 {
		t.Fatal("the counter saw no call for the initial read and watch: it counts nothing")
	}
	before := calls.Calls()
	for i := range 10000 {
		if _, _, _, ok := c.Owner(i % shards); !ok {
			t.Fatalf("shard %d unknown to the cache", i%shards)
		}
		c.Lookup(i % shards)
	}
	if got := calls.Calls() - before; got != 0 {
		t.Fatalf("10000 lookups made %d etcd calls, want 0", got)
	}
	// Updates arrive on the open watch, still without a call.
	moved, err := d.Move(ctx, 5, "ap-south", ownership.Active, "test", "drain")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitRevision(ctx, moved.ModRevision); err != nil {
		t.Fatal(err)
	}
	if owner, epoch, state, _ := c.Owner(5); owner != "ap-south" || epoch != moved.Epoch || state != "ACTIVE" {
		t.Fatalf("cache after the move: %s %d %s, want ap-south %d ACTIVE", owner, epoch, state, moved.Epoch)
	}
	if got := calls.Calls() - before; got != 0 {
		t.Fatalf("lookups and a watched update made %d etcd calls, want 0", got)
	}
}

func TestCacheRebuildsAfterItsWatchResumesPastACompaction(t *testing.T) {
	ctx := ctxT(t)
	const shards = 30
	d, _, _ := setup(t, shards)
	ep := strings.TrimPrefix(cluster(t).Endpoints()[0], "http://")
	proxy := toxitest.Proxy(t, "etcd-cache", ep)
	c, err := openCache(ctx, ownership.CacheConfig{Client: client(t, []string{"http://" + proxy.Listen}),
		Prefix: prefix(t), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Reloads() != 0 {
		t.Fatalf("reloads before any failure: %d", c.Reloads())
	}
	// Cut the cache's connection; while its watch is down, move shards
	// and compact etcd past the cache's revision.
	// Stop the proxy: every connection through it closes at once and
	// none can be made until it starts again (a toxic only acts when data
	// flows, which lets a watch event slip through first).
	proxy.Stop()
	stale := c.Revision()
	var last ownership.Entry
	for shard := range 6 {
		if last, err = d.Move(ctx, shard, "eu-west-2", ownership.Active, "test", "while the watch is down"); err != nil {
			t.Fatal(err)
		}
	}
	direct := client(t, cluster(t).Endpoints())
	if _, err := direct.Compact(ctx, last.ModRevision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	if got, _, _, _ := c.Owner(0); got == "eu-west-2" {
		t.Fatal("the cache saw a move through a cut connection: the cut did not work")
	}
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	// Resuming from stale+1 is compacted: the cache must re-read.
	if err := c.WaitRevision(ctx, last.ModRevision); err != nil {
		t.Fatal(err)
	}
	if c.Reloads() == 0 {
		t.Fatalf("cache went from revision %d to %d past a compaction at %d without a full re-read", stale, c.Revision(), last.ModRevision)
	}
	sameAsDirectory(t, d, c)
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestCacheServesAndFollowsWhileAnEtcdMemberIsKilled(t *testing.T) {
	ctx := ctxT(t)
	ec, err := etcdlocal.Start(ctx, []string{"k1", "k2", "k3"}, etcdlocal.Options{Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	s, _ := openStore(t)
	const shards = 9
	d := ownership.NewDirectory(client(t, ec.Endpoints()), s, ownership.WithPrefix("/kill/"), ownership.WithLogger(quiet()))
	if err := d.Bootstrap(ctx, topology(t), shards); err != nil {
		t.Fatal(err)
	}
	c, err := openCache(ctx, ownership.CacheConfig{Client: client(t, ec.Endpoints()), Prefix: "/kill/", Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Kill each member in turn (so one of them is the one serving the
	// cache's watch, and one is the leader): lookups keep answering and
	// moves made meanwhile reach the cache.
	for i := range 3 {
		ec.Kill(i)
		for shard := range shards {
			if _, _, _, ok := c.Owner(shard); !ok {
				t.Fatalf("member %d killed: shard %d not served by the cache", i, shard)
			}
		}
		moved, err := d.Move(ctx, i, regions[(i+1)%len(regions)], ownership.Active, "test", "member down")
		if err != nil {
			t.Fatalf("move with member %d killed: %v", i, err)
		}
		if err := c.WaitRevision(ctx, moved.ModRevision); err != nil {
			t.Fatalf("member %d killed: %v", i, err)
		}
		if owner, _, _, _ := c.Owner(i); owner != moved.Owner {
			t.Fatalf("member %d killed: cache owner %q, moved to %q", i, owner, moved.Owner)
		}
		if err := ec.Restart(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	sameAsDirectory(t, d, c)
}
