package patronistore

import (
	"context"

	"github.com/idemcoord/idemcoord/store"
)

// The incident ledger lives where the records do: an event is written on
// the cluster of its shard, and a scan reads the clusters one after
// another (each in its own keyset pages), so it holds one cluster's page
// at a time, as the single-cluster scan does. Rows come cluster by
// cluster; a ledger is a set, its order is the reader's.

// RecordIncidentEvents writes each event on its shard's cluster.
func (s *Store) RecordIncidentEvents(ctx context.Context, events []store.IncidentEvent) error {
	by := make([][]store.IncidentEvent, len(s.clusters))
	for _, e := range events {
		i := s.ClusterOf(e.Shard)
		by[i] = append(by[i], e)
	}
	return s.each(ctx, func(ctx context.Context, i int, c clusterStore) error {
		return c.RecordIncidentEvents(ctx, by[i])
	})
}

// ScanLedger scans each cluster's part of the window in turn: the
// clusters holding sc.Shards, or every cluster.
func (s *Store) ScanLedger(ctx context.Context, sc store.LedgerScan, fn func(store.LedgerRow) error) error {
	for i, c := range s.clusters {
		part := sc
		if sc.Shards != nil {
			part.Shards = nil
			for _, n := range sc.Shards {
				if s.ClusterOf(n) == i {
					part.Shards = append(part.Shards, n)
				}
			}
			if part.Shards == nil {
				continue
			}
		}
		if err := c.Store.ScanLedger(ctx, part, fn); err != nil {
			return err
		}
	}
	return nil
}
