package patronistore

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/idemcoord/idemcoord/store"
)

// The audit is kept where the change is made: a repair of one shard (a
// fence move, a purge, a reconcile, a lookup) writes its row in that
// shard's cluster, in the transaction that makes the change, as the store
// contract requires; a row about no shard (Audit: the failover
// controller's decisions) goes to the designated audit cluster, or to
// another one while it cannot be reached (Audit). One
// cluster for every row would make each repair a transaction across two
// databases, and lose the audit-with-the-change guarantee. Reads merge
// every cluster's rows, newest first.

// Audit writes one row on the audit cluster, or, when that cluster
// cannot be reached (nothing was written: store.UnavailableError), on the
// first other cluster that takes it. The row matters most when the
// audit cluster is down: a region lost whole takes its own cluster's
// primary with it, and the default audit cluster is the first region's;
// its failover's row (action region_failover) was lost with it. Reads
// merge every cluster's rows, so the row is found wherever it went. A
// commit whose outcome is unknown (store.AmbiguousCommitError) is not
// written again elsewhere: the row may be there, and a second one would
// count the decision twice.
func (s *Store) Audit(ctx context.Context, operator, action, reason, detail string) error {
	err := s.clusters[s.audit].Store.Audit(ctx, operator, action, reason, detail)
	if err == nil || !notWritten(err) {
		return err
	}
	errs := []error{&ClusterError{Cluster: s.clusters[s.audit].Name, Err: err}}
	for i, c := range s.clusters {
		if i == s.audit {
			continue
		}
		err := c.Store.Audit(ctx, operator, action, reason, detail)
		if err == nil {
			return nil
		}
		errs = append(errs, &ClusterError{Cluster: c.Name, Err: err})
		if !notWritten(err) {
			break
		}
	}
	return errors.Join(errs...)
}

// notWritten reports an error after which the write surely did not
// happen: the store was not reached, or the connection failed before the
// commit was sent.
func notWritten(err error) bool {
	var unavailable *store.UnavailableError
	var ambiguous *store.AmbiguousCommitError
	return errors.As(err, &unavailable) && !errors.As(err, &ambiguous)
}

// QueryAudit returns the rows f selects from every cluster, newest
// first. It needs every cluster.
func (s *Store) QueryAudit(ctx context.Context, f store.AuditFilter) ([]store.AuditRow, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 100 // store.AuditFilter's default
	}
	// Each cluster's first Offset+Limit rows hold the merged page.
	each := f
	each.Offset, each.Limit = 0, f.Offset+limit
	per := make([][]store.AuditRow, len(s.clusters))
	if err := s.each(ctx, func(ctx context.Context, i int, c clusterStore) error {
		rows, err := c.QueryAudit(ctx, each)
		per[i] = rows
		return err
	}); err != nil {
		return nil, err
	}
	all := slices.Concat(per...)
	slices.SortStableFunc(all, func(a, b store.AuditRow) int {
		if c := b.At.Compare(a.At); c != 0 {
			return c
		}
		return cmp.Compare(a.ID.String(), b.ID.String()) // as each cluster orders: at DESC, id
	})
	if f.Offset >= len(all) {
		return nil, nil
	}
	all = all[f.Offset:]
	if len(all) > limit {
		all = all[:limit]
	}
	return all, nil
}

// CountAudit counts the rows f selects on every cluster.
func (s *Store) CountAudit(ctx context.Context, f store.AuditFilter) (int, error) {
	counts := make([]int, len(s.clusters))
	if err := s.each(ctx, func(ctx context.Context, i int, c clusterStore) error {
		n, err := c.CountAudit(ctx, f)
		counts[i] = n
		return err
	}); err != nil {
		return 0, err
	}
	total := 0
	for _, n := range counts {
		total += n
	}
	return total, nil
}

// AuditLog returns the newest limit rows of every cluster, newest first.
func (s *Store) AuditLog(ctx context.Context, limit int) ([]store.AuditEntry, error) {
	rows, err := s.QueryAudit(ctx, store.AuditFilter{Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]store.AuditEntry, len(rows))
	for i, r := range rows {
		out[i] = store.AuditEntry{ID: r.ID, Operator: r.Operator, Action: r.Action, Reason: r.Reason,
			OperationID: r.OperationID, ActorScope: r.ActorScope, Detail: r.Detail}
	}
	return out, nil
}
