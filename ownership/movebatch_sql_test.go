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

// TestABatchOfMovesBumpsItsFencesInOneStoreTransaction: a region's
// failover (250 shards here, three batches) moves the SQL fences of each
// batch in one store call (one transaction) rather than one transaction
// per shard on the pool the requests share; every shard ends moved once,
// etcd and SQL agreeing.
func TestABatchOfMovesBumpsItsFencesInOneStoreTransaction(t *testing.T) {
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
	batches := int64((len(plans) + 99) / 100)
	if n, b := fences.one.Load(), fences.batches.Load(); n != 0 || b != batches {
		t.Errorf("%d shards moved with %d single fence moves and %d batched calls, want 0 and %d (one per batch)",
			len(plans), n, b, batches)
	}
	for _, e := range agree(t, d, s) {
		if topology(t).Home(e.Shard) == "us-east" && (e.Owner != "eu-west" || e.Epoch != 2) {
			t.Fatalf("shard %d: %s, want eu-west at epoch 2", e.Shard, e)
		}
	}
}
