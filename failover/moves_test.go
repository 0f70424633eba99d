package failover_test

import (
	"testing"

	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/internal/etcdtest"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/sqlstore"
)

// TestARegionFailoverBatchesItsEtcdWrites: failing a region over moves its
// 342 shards (1024 shards, three regions) with a handful of etcd calls,
// not three per shard: the FENCING writes and the final writes go in
// transactions of up to a hundred shards, each a compare-and-swap on
// every shard's mod revision. The outcome is Move's: every shard at its
// failover region in FAILED_OVER at epoch 2, the SQL fence agreeing, one
// move_fence audit row per shard.
func TestARegionFailoverBatchesItsEtcdWrites(t *testing.T) {
	ctx := ctxT(t)
	s, err := sqlstore.Open(ctx, sqlstore.Config{Migrate: true, DSN: pgtest.NewDatabase(t), Seed: 1, Logger: quiet(), MaxConns: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var calls ownership.CallCounter
	cli := etcdtest.Client(t, cluster(t).Endpoints(), calls.DialOptions()...)
	topo := topology(t)
	d := ownership.NewDirectory(cli, s, ownership.WithPrefix(prefix(t)), ownership.WithLogger(quiet()))
	if err := d.Bootstrap(ctx, topo, 1024); err != nil {
		t.Fatal(err)
	}
	before := calls.Calls()
	moved, err := failover.Repair{Client: cli, Directory: d, Topology: topo, Audit: s}.Failover(ctx, "us-east", "test", "batch")
	if err != nil || len(moved) != 342 {
		t.Fatalf("failover: %d moved, %v; want 342", len(moved), err)
	}
	// One list, two transactions per hundred shards (4 batches), the
	// repair's own reads: far below the 3 x 342 calls of shard-by-shard
	// moves.
	if n := calls.Calls() - before; n > 20 {
		t.Errorf("failing 342 shards over took %d etcd calls, want at most 20 (batched)", n)
	}
	entries, _, err := d.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if topo.Home(e.Shard) != "us-east" {
			continue
		}
		epoch, owner, err := s.Fence(ctx, e.Shard)
		if err != nil {
			t.Fatal(err)
		}
		if e.Owner != "eu-west" || e.Epoch != 2 || e.State != ownership.FailedOver || epoch != 2 || owner != "eu-west" {
			t.Fatalf("shard %d: etcd %s, SQL epoch %d owner %q; want eu-west FAILED_OVER at epoch 2 in both", e.Shard, e, epoch, owner)
		}
	}
	if rows := audit(t, s, "move_fence"); len(rows) != 342 {
		t.Errorf("%d move_fence audit rows, want 342", len(rows))
	}
}
