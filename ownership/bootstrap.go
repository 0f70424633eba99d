package ownership

import (
	"context"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// bootstrapBatch is how many shard keys one bootstrap transaction
// creates: below etcd's default --max-txn-ops (128) for both the compares
// and the puts.
const bootstrapBatch = 100

// Topology is what Bootstrap needs of the region topology
// (*region.Topology implements it).
type Topology interface {
	// Home returns the home region of a shard.
	Home(shard int) string
}

// Bootstrap makes the directory hold shards shards, each missing one
// owned by its home region at epoch 1 ACTIVE, and then has the fence store
// create the matching fence rows. It is idempotent and never overwrites
// an entry, so every instance may call it at start.
//
// The shard count is written once: Bootstrap returns *ShardCountError
// (errors.Is ErrShardCount) when etcd already holds another count, and
// then changes nothing.
//
// Every step is guarded (create if absent, compare the count), so a step
// whose outcome a transient etcd failure hid (etcdserver: request timed
// out, a leader change) is run again from the start, within
// retry.Default.Etcd: instances starting together on a busy cluster ride
// it out instead of failing their start. The fence rows are written after
// the etcd steps, by the store within its own retry budget.
func (d *Directory) Bootstrap(ctx context.Context, topo Topology, shards int) error {
	if shards < 1 {
		return fmt.Errorf("%w: shards must be at least 1, got %d", ErrBadMove, shards)
	}
	err := d.etcdLoop(stepBootstrap, -1).Do(ctx, stepBootstrap, transientEtcd, func(ctx context.Context) error {
		return d.bootstrap(ctx, topo, shards)
	})
	if err != nil {
		return err
	}
	// Outside the etcd loop: the store retries its own transaction within
	// its own budget (a share of the etcd loop would cap it at the loop's
	// attempts), and no etcd failure calls for running it again.
	if err := d.fences.BootstrapFences(ctx, shards, topo.Home); err != nil {
		return fmt.Errorf("ownership: bootstrap fences: %w", err)
	}
	return nil
}

// bootstrap is the etcd half of Bootstrap: the shard count and every
// missing entry, each step guarded so that it may run again.
func (d *Directory) bootstrap(ctx context.Context, topo Topology, shards int) error {
	ck := countKey(d.prefix)
	resp, err := d.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(ck), "=", 0)).
		Then(clientv3.OpPut(ck, strconv.Itoa(shards))).
		Else(clientv3.OpGet(ck)).Commit()
	if err != nil {
		return fmt.Errorf("ownership: bootstrap shard count: %w", err)
	}
	if !resp.Succeeded {
		stored, err := parseCount(resp.Responses[0].GetResponseRange().Kvs[0].Value)
		if err != nil {
			return err
		}
		if stored != shards {
			return &ShardCountError{Configured: shards, Stored: stored}
		}
	}
	existing, _, err := d.List(ctx)
	if err != nil {
		return err
	}
	have := make(map[int]bool, len(existing))
	for _, e := range existing {
		have[e.Shard] = true
	}
	var missing []int
	for s := range shards {
		if !have[s] {
			missing = append(missing, s)
		}
	}
	for len(missing) > 0 {
		n := min(bootstrapBatch, len(missing))
		if err := d.createEntries(ctx, topo, missing[:n]); err != nil {
			return err
		}
		missing = missing[n:]
	}
	return nil
}

// createEntries creates the entries of shards in one transaction, each
// guarded by "key absent". When another instance bootstrapping at the same
// time created one of them, the batch fails as a whole and is redone key
// by key, never overwriting.
func (d *Directory) createEntries(ctx context.Context, topo Topology, shards []int) error {
	cmps := make([]clientv3.Cmp, len(shards))
	puts := make([]clientv3.Op, len(shards))
	for i, s := range shards {
		k := shardKey(d.prefix, s)
		cmps[i] = clientv3.Compare(clientv3.CreateRevision(k), "=", 0)
		puts[i] = clientv3.OpPut(k, Entry{Owner: topo.Home(s), Epoch: 1, State: Active}.encode())
	}
	resp, err := d.cli.Txn(ctx).If(cmps...).Then(puts...).Commit()
	if err != nil {
		return fmt.Errorf("ownership: bootstrap shards: %w", err)
	}
	if resp.Succeeded {
		return nil
	}
	for i := range shards {
		if _, err := d.cli.Txn(ctx).If(cmps[i]).Then(puts[i]).Commit(); err != nil {
			return fmt.Errorf("ownership: bootstrap shard %d: %w", shards[i], err)
		}
	}
	return nil
}
