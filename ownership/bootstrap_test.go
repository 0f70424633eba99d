package ownership_test

import (
	"errors"
	"sync/atomic"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idemcoord/idemcoord/internal/etcdtest"
	"github.com/idemcoord/idemcoord/ownership"
)

func TestBootstrapGivesEveryShardItsHomeAtEpochOneAndNeverOverwrites(t *testing.T) {
	ctx := ctxT(t)
	const shards = 250 // more than one bootstrap batch
	d, s, _ := setup(t, shards)
	topo := topology(t)
	entries := agree(t, d, s)
	if len(entries) != shards {
		t.Fatalf("%d entries, want %d", len(entries), shards)
	}
	for _, e := range entries {
		if e.Owner != topo.Home(e.Shard) || e.Epoch != 1 || e.State != ownership.Active {
			t.Fatalf("after bootstrap: %s, want owner %q epoch 1 ACTIVE", e, topo.Home(e.Shard))
		}
	}
	moved, err := d.Move(ctx, 7, "ap-south", ownership.Active, "test", "drain")
	if err != nil {
		t.Fatal(err)
	}
	// Bootstrapping again (a restart, another instance) changes nothing.
	if err := d.Bootstrap(ctx, topo, shards); err != nil {
		t.Fatal(err)
	}
	got, err := d.Get(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	if got.Owner != "ap-south" || got.Epoch != 2 || got.ModRevision != moved.ModRevision {
		t.Fatalf("moved shard after a second bootstrap: %s rev %d, want %s rev %d", got, got.ModRevision, moved, moved.ModRevision)
	}
	agree(t, d, s)
	if n, err := d.ShardCount(ctx); err != nil || n != shards {
		t.Fatalf("shard count %d, %v; want %d", n, err, shards)
	}
}

func TestBootstrapRefusesAnotherShardCount(t *testing.T) {
	ctx := ctxT(t)
	d, s, _ := setup(t, 16)
	err := d.Bootstrap(ctx, topology(t), 1024)
	var sc *ownership.ShardCountError
	if !errors.As(err, &sc) || !errors.Is(err, ownership.ErrShardCount) || sc.Stored != 16 || sc.Configured != 1024 {
		t.Fatalf("bootstrap with 1024 shards over 16: %v, want ShardCountError{Configured: 1024, Stored: 16}", err)
	}
	if err := d.CheckShardCount(ctx, 1024); !errors.Is(err, ownership.ErrShardCount) {
		t.Fatalf("CheckShardCount(1024) = %v, want ErrShardCount", err)
	}
	if err := d.CheckShardCount(ctx, 16); err != nil {
		t.Fatalf("CheckShardCount(16) = %v", err)
	}
	entries, _, err := d.List(ctx)
	if err != nil || len(entries) != 16 {
		t.Fatalf("entries after the refused bootstrap: %d, %v; want 16", len(entries), err)
	}
	if n, err := s.ShardCount(ctx); err != nil || n != 16 {
		t.Fatalf("SQL shard count after the refused bootstrap: %d, %v; want 16", n, err)
	}
}

func TestAnEmptyDirectoryIsNotBootstrapped(t *testing.T) {
	s, _ := openStore(t)
	d := ownership.NewDirectory(client(t, cluster(t).Endpoints()), s, ownership.WithPrefix(prefix(t)))
	if err := d.CheckShardCount(ctxT(t), 16); !errors.Is(err, ownership.ErrNotBootstrapped) {
		t.Fatalf("CheckShardCount on an empty directory = %v, want ErrNotBootstrapped", err)
	}
	if _, err := d.Get(ctxT(t), 0); !errors.Is(err, ownership.ErrNotBootstrapped) {
		t.Fatalf("Get on an empty directory = %v, want ErrNotBootstrapped", err)
	}
}

func TestConcurrentBootstrapsCreateEveryShardOnce(t *testing.T) {
	ctx := ctxT(t)
	s, _ := openStore(t)
	const shards, instances = 250, 4
	errs := make(chan error, instances)
	for range instances {
		d := ownership.NewDirectory(client(t, cluster(t).Endpoints()), s, ownership.WithPrefix(prefix(t)), ownership.WithLogger(quiet()))
		go func() { errs <- d.Bootstrap(ctx, topology(t), shards) }()
	}
	for range instances {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	d := ownership.NewDirectory(client(t, cluster(t).Endpoints()), s, ownership.WithPrefix(prefix(t)))
	entries := agree(t, d, s)
	if len(entries) != shards {
		t.Fatalf("%d entries after concurrent bootstraps, want %d", len(entries), shards)
	}
	// Each key was written once: created and last modified at the same
	// revision.
	resp, err := client(t, cluster(t).Endpoints()).Get(ctx, prefix(t)+"shards/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if kv.Version != 1 {
			t.Fatalf("%s written %d times by concurrent bootstraps, want once", kv.Key, kv.Version)
		}
	}
}

// TestABootstrapRidesOutEtcdRequestTimeouts: a start on a busy etcd whose
// transactions time out ("etcdserver: request timed out", once before
// the request reached the server and once after it was applied) still
// creates every shard exactly once, instead of failing the instance's
// start.
func TestABootstrapRidesOutEtcdRequestTimeouts(t *testing.T) {
	ctx := ctxT(t)
	s, _ := openStore(t)
	const shards = 250
	var txns atomic.Int64
	timeouts := etcdtest.TxnFaults(&txns, func(n int64) etcdtest.Fault {
		switch n {
		case 1: // the count's transaction: timed out before it ran
			return etcdtest.LostBefore
		case 3: // the first batch of entries: applied, and then timed out
			return etcdtest.LostAfter
		}
		return etcdtest.Pass
	})
	d := ownership.NewDirectory(client(t, cluster(t).Endpoints(), timeouts), s, ownership.WithPrefix(prefix(t)),
		ownership.WithLogger(quiet()))
	if err := d.Bootstrap(ctx, topology(t), shards); err != nil {
		t.Fatalf("bootstrap on an etcd that timed two transactions out: %v", err)
	}
	if n := txns.Load(); n < 4 {
		t.Fatalf("%d transactions: the injected timeouts did not happen", n)
	}
	if entries := agree(t, d, s); len(entries) != shards {
		t.Fatalf("%d entries, want %d", len(entries), shards)
	}
	resp, err := client(t, cluster(t).Endpoints()).Get(ctx, prefix(t)+"shards/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if kv.Version != 1 {
			t.Fatalf("%s written %d times, want once", kv.Key, kv.Version)
		}
	}
}
