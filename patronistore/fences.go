package patronistore

import (
	"context"
	"fmt"
	"sync"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/store"
)

// A shard's fence lives in its cluster, with its records: every write
// there locks it FOR SHARE in its own transaction, as on one database.
// The other clusters hold no owner for that shard (their row, if any, is
// unowned and admits nobody), so a shard routed to the wrong cluster by a
// bad map is refused, never written twice.

// Fence returns shard's fence from its cluster.
func (s *Store) Fence(ctx context.Context, shard int) (int64, string, error) {
	return s.of(shard).Fence(ctx, shard)
}

// MoveFence moves m.Shard's fence on its cluster (audited there, in the
// move's transaction).
func (s *Store) MoveFence(ctx context.Context, m fencing.Move) error {
	return s.of(m.Shard).MoveFence(ctx, m)
}

// MoveFences moves each move's fence on its shard's cluster, the moves of
// one cluster in one transaction there (sqlstore.Store.MoveFences), the
// clusters at once. It returns one error per move, in order.
func (s *Store) MoveFences(ctx context.Context, moves []fencing.Move) []error {
	errs := make([]error, len(moves))
	byCluster := map[int][]int{}
	for i, m := range moves {
		c := s.ClusterOf(m.Shard)
		byCluster[c] = append(byCluster[c], i)
	}
	var wg sync.WaitGroup
	for c, idx := range byCluster {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ms := make([]fencing.Move, len(idx))
			for j, i := range idx {
				ms[j] = moves[i]
			}
			for j, err := range s.clusters[c].Store.MoveFences(ctx, ms) {
				if err != nil {
					err = fmt.Errorf("patronistore: cluster %s: %w", s.clusters[c].Name, err)
				}
				errs[idx[j]] = err
			}
		}()
	}
	wg.Wait()
	return errs
}

// BootstrapFences records the shard count on every cluster and gives
// each cluster's own shards their home owner at epoch 1 (never changing
// an owned one).
func (s *Store) BootstrapFences(ctx context.Context, shards int, home func(shard int) string) error {
	return s.each(ctx, func(ctx context.Context, i int, c clusterStore) error {
		return c.BootstrapOwnFences(ctx, shards, home, func(n int) bool { return s.ClusterOf(n) == i })
	})
}

// ShardCount returns the shard count every cluster recorded: a cluster
// that recorded another is *ShardCountMismatchError, one not bootstrapped
// ErrNotBootstrapped.
func (s *Store) ShardCount(ctx context.Context) (int, error) {
	counts := make([]int, len(s.clusters))
	if err := s.each(ctx, func(ctx context.Context, i int, c clusterStore) error {
		n, err := c.ShardCount(ctx)
		counts[i] = n
		return err
	}); err != nil {
		return 0, err
	}
	for i, n := range counts[1:] {
		if n != counts[0] {
			return 0, fmt.Errorf("patronistore: cluster %s: %w", s.clusters[i+1].Name,
				&store.ShardCountMismatchError{Store: n, Configured: counts[0]})
		}
	}
	return counts[0], nil
}

// Fences returns every shard's fence, each from its own cluster, by
// shard. It needs every cluster: a cluster that is down is an error.
func (s *Store) Fences(ctx context.Context) ([]store.FenceRow, error) {
	per := make([][]store.FenceRow, len(s.clusters))
	if err := s.each(ctx, func(ctx context.Context, i int, c clusterStore) error {
		rows, err := c.Fences(ctx)
		per[i] = rows
		return err
	}); err != nil {
		return nil, err
	}
	var out []store.FenceRow
	for i, rows := range per {
		for _, r := range rows {
			if s.ClusterOf(r.Shard) == i {
				out = append(out, r)
			}
		}
	}
	sortFences(out)
	return out, nil
}
