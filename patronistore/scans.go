package patronistore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/idemcoord/idemcoord/store"
)

// The scans page through several clusters by the same keyset their
// single-cluster form uses: each cluster returns its first page after the
// cursor, and the merged page is the first Limit of their union in that
// order. The cursor is the store's own (a position in the order, not in
// a cluster), so it stays valid when a shard moves between clusters.

// Stranded returns a page of stranded async work from the clusters that
// hold the shards scan may run, in lease-expiry order.
func (s *Store) Stranded(ctx context.Context, scan store.StrandedScan) ([]store.Queued, error) {
	return s.queued(ctx, scan, func(ctx context.Context, c clusterStore, sc store.StrandedScan) ([]store.Queued, error) {
		return c.Stranded(ctx, sc)
	})
}

// Fenced returns a page of fenced-out running operations from the
// clusters that hold the shards scan may run.
func (s *Store) Fenced(ctx context.Context, scan store.StrandedScan) ([]store.Queued, error) {
	return s.queued(ctx, scan, func(ctx context.Context, c clusterStore, sc store.StrandedScan) ([]store.Queued, error) {
		return c.Fenced(ctx, sc)
	})
}

func (s *Store) queued(ctx context.Context, scan store.StrandedScan,
	fn func(context.Context, clusterStore, store.StrandedScan) ([]store.Queued, error)) ([]store.Queued, error) {
	if scan.Limit <= 0 {
		return nil, fmt.Errorf("patronistore: scan: limit must be positive, got %d", scan.Limit)
	}
	per := make([][]store.Queued, len(s.clusters))
	err := s.each(ctx, func(ctx context.Context, i int, c clusterStore) error {
		sc := scan
		sc.Runnable = s.runnableOn(i, scan.Runnable)
		if len(sc.Runnable) == 0 {
			return nil
		}
		q, err := fn(ctx, c, sc)
		per[i] = q
		return err
	})
	if err != nil {
		return nil, err
	}
	all := slices.Concat(per...)
	slices.SortFunc(all, func(a, b store.Queued) int {
		if c := a.Record.LeaseExpiresAt.Compare(b.Record.LeaseExpiresAt); c != 0 {
			return c
		}
		return cmp.Compare(a.Record.OperationID.String(), b.Record.OperationID.String())
	})
	if scan.Limit > 0 && len(all) > scan.Limit {
		all = all[:scan.Limit]
	}
	return all, nil
}

// runnableOn keeps of rs the shards cluster i holds.
func (s *Store) runnableOn(i int, rs []store.Runnable) []store.Runnable {
	var out []store.Runnable
	for _, r := range rs {
		if r.AllShards {
			out = append(out, r)
			continue
		}
		var mine []int
		for _, n := range r.Shards {
			if s.ClusterOf(n) == i {
				mine = append(mine, n)
			}
		}
		if len(mine) > 0 {
			out = append(out, store.Runnable{Endpoints: r.Endpoints, Shards: mine})
		}
	}
	return out
}

// ListOperations returns a page of the operations f selects from the
// clusters that hold f.Shards, oldest change first; its Next is the
// SQL store's cursor (the last row's change time and id), so paging is
// stable across clusters. Each cluster asked audits the listing.
func (s *Store) ListOperations(ctx context.Context, operator, reason string, f store.OperationFilter) (store.OperationPage, error) {
	byCluster := make([][]int, len(s.clusters))
	for _, n := range f.Shards {
		i := s.ClusterOf(n)
		byCluster[i] = append(byCluster[i], n)
	}
	per := make([]store.OperationPage, len(s.clusters))
	err := s.each(ctx, func(ctx context.Context, i int, c clusterStore) error {
		if len(byCluster[i]) == 0 && len(f.Shards) > 0 {
			return nil
		}
		g := f
		g.Shards = byCluster[i]
		page, err := c.ListOperations(ctx, operator, reason, g)
		per[i] = page
		return err
	})
	if err != nil {
		return store.OperationPage{}, err
	}
	var (
		all  []store.Record
		more bool
	)
	for _, p := range per {
		all = append(all, p.Operations...)
		more = more || p.Next != ""
	}
	slices.SortFunc(all, func(a, b store.Record) int {
		if c := a.UpdatedAt.Compare(b.UpdatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.OperationID.String(), b.OperationID.String())
	})
	var page store.OperationPage
	if len(all) > f.Limit {
		all, more = all[:f.Limit], true
	}
	page.Operations = all
	if more && len(all) > 0 {
		page.Next = cursor(all[len(all)-1])
	}
	return page, nil
}

// cursor is the SQL store's ListOperations cursor of r.
func cursor(r store.Record) string {
	return strings.Join([]string{r.UpdatedAt.UTC().Format(time.RFC3339Nano), r.OperationID.String()}, "_")
}
