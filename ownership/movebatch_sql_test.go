package ownership_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/sqlstore"
)

var _ ownership.FenceBatcher = (*sqlstore.Store)(nil)

// countingFences is the real store, counting the fence calls a mover makes.
type countingFences struct {
	*sqlstore.Store
	one, batches atomic.Int64
}

func (c *countingFences) MoveFence(ctx context.Context, m fencing.Move) error {
	c.one.Add(1)
	return c.Store.MoveFence(ctx, m)
}

func (c *countingFences) MoveFences(ctx context.Context, ms []fencing.Move) []error {
	c.batches.Add(1)
	return c.Store.MoveFences(ctx, ms)
}

// TestAFailoversMovesBumpTheirFencesInOneStoreTransaction: a region's
// failover (250 shards here, three etcd batches) moves the SQL fences of
// every batch in one store call (one transaction), rather than one
// transaction per shard on the pool the requests share, or one per batch:
// those ran side by side, each scanning the fence table, and at
// SERIALIZABLE all but one were aborted (40001) and run again, which
// delayed every failover. Every shard ends moved once, etcd and SQL
// agreeing.
func TestAFailoversMovesBumpTheirFencesInOneStoreTransaction(t *testing.T) {
	ctx := ctxT(t)
	s, _ := openStore(t)
	fences := &countingFences{Store: s}
	d := ownership.NewDirectory(client(t, cluster(t).Endpoints()), fences, ownership.WithPrefix(prefix(t)),
		ownership.WithLogger(quiet()))
	if err := d.Bootstrap(ctx, topology(t), 750); err != nil {
		t.Fatal(err)
	}
	plans := failoverPlans(ctx, t, d, "us-east", "eu-west")
	_, errs := d.MoveBatch(ctx, plans, "controller", "us-east down", 64)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("shard %d: %v", plans[i].Entry.Shard, err)
		}
	}
	if len(plans) <= 200 {
		t.Fatalf("%d plans: the test needs more than two etcd batches", len(plans))
	}
	if n, b := fences.one.Load(), fences.batches.Load(); n != 0 || b != 1 {
		t.Errorf("%d shards moved with %d single fence moves and %d batched calls, want 0 and 1", len(plans), n, b)
	}
	for _, e := range agree(t, d, s) {
		if topology(t).Home(e.Shard) == "us-east" && (e.Owner != "eu-west" || e.Epoch != 2) {
			t.Fatalf("shard %d: %s, want eu-west at epoch 2", e.Shard, e)
		}
	}
}
