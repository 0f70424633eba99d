package patronistore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// Cleanup deletes up to batch expired records across the clusters: each
// call starts at the next cluster, so a cluster with a large backlog does
// not starve the others, and passes what is left of batch on. A cluster
// that fails is skipped (its records wait for the next pass); the error
// is returned with what the others deleted.
func (s *Store) Cleanup(ctx context.Context, batch int) (int, error) {
	return s.cleanup(ctx, batch, func(ctx context.Context, c clusterStore, n int) (int, error) { return c.Cleanup(ctx, n) })
}

// AuditedCleanup is Cleanup as an audited repair: each cluster that
// deleted something audits its deletion in the transaction that makes
// it; when none did, the audit cluster records the empty cleanup.
func (s *Store) AuditedCleanup(ctx context.Context, operator, reason string, batch int) (int, error) {
	if strings.TrimSpace(operator) == "" || strings.TrimSpace(reason) == "" {
		return 0, store.ErrNoOperator
	}
	n, err := s.cleanup(ctx, batch, func(ctx context.Context, c clusterStore, n int) (int, error) {
		return c.AuditedCleanupIfAny(ctx, operator, reason, n)
	})
	if n == 0 && err == nil {
		_, err = s.clusters[s.audit].Store.AuditedCleanup(ctx, operator, reason, max(batch, 1))
	}
	return n, err
}

func (s *Store) cleanup(ctx context.Context, batch int, fn func(context.Context, clusterStore, int) (int, error)) (int, error) {
	if batch <= 0 {
		batch = sqlstore.DefaultCleanupBatch
	}
	start := int(s.next.Add(1)) % len(s.clusters)
	total := 0
	var errs []error
	for k := range s.clusters {
		if total >= batch {
			break
		}
		i := (start + k) % len(s.clusters)
		n, err := fn(ctx, s.clusters[i].Store, batch-total)
		total += n
		if err != nil {
			errs = append(errs, &ClusterError{Cluster: s.clusters[i].Name, Err: err})
		}
	}
	return total, errors.Join(errs...)
}

// Stats adds up every cluster's counts (each bounded by limit). It needs
// every cluster.
func (s *Store) Stats(ctx context.Context, limit int, stuckAfter time.Duration) (store.Stats, error) {
	per := make([]store.Stats, len(s.clusters))
	if err := s.each(ctx, func(ctx context.Context, i int, c clusterStore) error {
		st, err := c.Stats(ctx, limit, stuckAfter)
		per[i] = st
		return err
	}); err != nil {
		return store.Stats{}, err
	}
	out := store.Stats{ByState: map[string]int64{}}
	for _, st := range per {
		for k, v := range st.ByState {
			out.ByState[k] += v
		}
		out.Stuck += st.Stuck
		out.CleanupBacklog += st.CleanupBacklog
	}
	return out, nil
}

// Purge purges actor's records on its cluster: an actor's records all
// live on its shard.
func (s *Store) Purge(ctx context.Context, operator, reason, actor string) (int, error) {
	return s.ofActor(actor).Purge(ctx, operator, reason, actor)
}

// AdminFind returns sc's record from its actor's cluster.
func (s *Store) AdminFind(ctx context.Context, operator, reason string, sc store.Scope) (store.Record, error) {
	return s.ofActor(sc.Actor).AdminFind(ctx, operator, reason, sc)
}

// AdminLookup returns operation opID from whichever cluster holds it.
// An operation id does not name its shard, and encoding the cluster in
// it would tie ids to a placement that a split changes: operators look
// up rarely, so every cluster is asked (the one that finds it audits the
// lookup). A cluster that cannot be asked makes a miss an error, never
// ErrNotFound: the operation may be there.
func (s *Store) AdminLookup(ctx context.Context, operator, reason string, opID uuid.UUID) (store.Record, error) {
	var rec store.Record
	err := s.findOne(ctx, func(ctx context.Context, c clusterStore) error {
		r, err := c.AdminLookup(ctx, operator, reason, opID)
		if err == nil {
			rec = r
		}
		return err
	})
	return rec, err
}

// ReconcileUnknown settles operation opID on whichever cluster holds it
// (AdminLookup's search).
func (s *Store) ReconcileUnknown(ctx context.Context, operator, reason string, opID uuid.UUID, res store.Result) error {
	return s.findOne(ctx, func(ctx context.Context, c clusterStore) error {
		return c.ReconcileUnknown(ctx, operator, reason, opID, res)
	})
}

// ReconcilePastWindow settles operation opID on whichever cluster holds
// it (AdminLookup's search).
func (s *Store) ReconcilePastWindow(ctx context.Context, operator, reason string, opID uuid.UUID, window time.Duration,
	res store.Result) error {
	return s.findOne(ctx, func(ctx context.Context, c clusterStore) error {
		return c.ReconcilePastWindow(ctx, operator, reason, opID, window, res)
	})
}

// findOne runs fn on the clusters in turn until one does not answer
// store.ErrNotFound. It returns ErrNotFound only when every cluster
// answered so.
func (s *Store) findOne(ctx context.Context, fn func(context.Context, clusterStore) error) error {
	var errs []error
	for _, c := range s.clusters {
		err := fn(ctx, c.Store)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, store.ErrNotFound):
		case errors.Is(err, store.ErrNoOperator):
			return err
		default:
			errs = append(errs, &ClusterError{Cluster: c.Name, Err: err})
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return store.ErrNotFound
}

// ActorScopes returns up to limit actor scopes of subject from every
// cluster, sorted.
func (s *Store) ActorScopes(ctx context.Context, subject string, limit int) ([]string, error) {
	per := make([][]string, len(s.clusters))
	if err := s.each(ctx, func(ctx context.Context, i int, c clusterStore) error {
		sc, err := c.ActorScopes(ctx, subject, limit)
		per[i] = sc
		return err
	}); err != nil {
		return nil, err
	}
	all := slices.Compact(slices.Sorted(slices.Values(slices.Concat(per...))))
	if limit > 0 && len(all) > limit {
		all = all[:limit]
	}
	return all, nil
}

// nextCounter is the rotation of Cleanup's first cluster.
type nextCounter = atomic.Uint64
