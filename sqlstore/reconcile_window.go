package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/downstream"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// pastWindowCond is the states ReconcilePastWindow settles; the update is
// also conditioned on the version read, so a takeover or finish in
// between makes it ErrLostOwnership.
const pastWindowCond = `state IN ('RETRYABLE_FAILURE', 'PENDING', 'IN_PROGRESS')`

// ReconcilePastWindow implements store.Admin: the operator's settling of
// an operation the downstream window guard leaves alone (claim.go's
// WindowPassed), found by id after checking the provider by hand. The
// checks are made on the record and the database's time read in the
// transaction that changes it, with its audit row ("reconcile", like
// ReconcileUnknown's): no repair goes unrecorded. A COMPLETED from
// RETRYABLE_FAILURE goes, as the state machine asks, through a takeover
// (IN_PROGRESS) that records its result at once.
func (s *Store) ReconcilePastWindow(ctx context.Context, operator, reason string, opID uuid.UUID, window time.Duration,
	res store.Result) error {
	if err := checkOperator(operator, reason); err != nil {
		return err
	}
	if window <= 0 {
		return fmt.Errorf("%w: the endpoint has no downstream_window", store.ErrNotPastWindow)
	}
	return s.RunTx(ctx, func(tx pgx.Tx) error {
		rec, err := recordByOpID(ctx, tx, opID)
		if err != nil {
			return err
		}
		var now time.Time
		if err := tx.QueryRow(ctx, `SELECT COALESCE($1::TIMESTAMPTZ, now())`, s.now()).Scan(&now); err != nil {
			return fmt.Errorf("sqlstore: read the database's time: %w", err)
		}
		if err := pastWindow(rec, now, window, res.State); err != nil {
			return err
		}
		tok, err := fenceOf(ctx, tx, rec.Token.Shard)
		if err != nil {
			return err
		}
		status, headers, body, resourceID, errSummary, err := snapshotArgs(res)
		if err != nil {
			return err
		}
		l, w := leaseOf(rec, tok), writerID("reconcile")
		u := s.prepareUpdate(l, w, "reconcile", resolveSet, pastWindowCond,
			string(res.State), status, headers, body, res.Snapshot.BodyOmitted, resourceID, errSummary, l.TTL.Milliseconds(),
			w, res.Stage)
		ok, err := u.run(ctx, s, tx)
		if err = s.owned(ctx, u.l, "reconcile", ok, err); err != nil {
			return err
		}
		return s.audit(ctx, tx, operator, "reconcile", reason, &opID, rec.Scope.Actor,
			fmt.Sprintf("%s past the downstream window (was %s, first claimed %s, window %s)", res.State, rec.State,
				rec.CreatedAt.UTC().Format(time.RFC3339), window))
	})
}

// pastWindow returns nil when rec, at now, is left by the window guard
// and may take the state to; else an error wrapping ErrNotPastWindow
// that says why.
func pastWindow(rec store.Record, now time.Time, window time.Duration, to idempotency.State) error {
	running := rec.State == idempotency.Pending || rec.State == idempotency.InProgress
	switch {
	case rec.State != idempotency.RetryableFailure && !running:
		return fmt.Errorf("%w: it is %s", store.ErrNotPastWindow, rec.State)
	case running && rec.LeaseExpiresAt.After(now):
		return fmt.Errorf("%w: its lease runs until %s (a worker may still be running it)", store.ErrNotPastWindow,
			rec.LeaseExpiresAt.UTC().Format(time.RFC3339))
	case !downstream.Passed(rec.CreatedAt, now, window):
		return fmt.Errorf("%w: first claimed at %s, within its window %s (the gateway still retries it)",
			store.ErrNotPastWindow, rec.CreatedAt.UTC().Format(time.RFC3339), window)
	case to == idempotency.Completed:
		return nil
	case to == idempotency.RetryableFailure && running:
		return nil
	case to == idempotency.RetryableFailure:
		return fmt.Errorf("%w: it is RETRYABLE_FAILURE already (nothing to settle: the client may send the intent again under a new key)",
			store.ErrNotPastWindow)
	}
	return fmt.Errorf("%w: cannot settle it as %s", store.ErrNotPastWindow, to)
}
