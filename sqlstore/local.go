package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// LocalFunc does the caller's business writes inside the claim's
// transaction and returns the response to store. It may run more than once
// (the transaction is retried whole) and must have no effect outside tx.
type LocalFunc func(ctx context.Context, tx pgx.Tx, opID uuid.UUID) (store.Snapshot, error)

// RunLocal claims a key, runs fn and records COMPLETED, all in one
// serializable transaction: for business writes that live in the same
// database, the claim, the writes and the result commit together or not at
// all. If fn or saving the result fails, everything rolls back and the key
// stays as it was (unclaimed, or claimable again).
//
// When the key exists, fn does not run and the Claim says why (Replayed,
// Mismatch, InFlight, Unresolved); an expired lease or a retryable failure
// is taken over inside the same transaction. A commit lost with the
// connection is resolved by running the claim again: the second run sees
// its own COMPLETED record (or nothing) and answers accordingly. A unique
// violation (23505) from fn is re-checked once through the claim, since
// under SERIALIZABLE it may be a racer's commit in disguise; a second one
// is returned.
func (s *Store) RunLocal(ctx context.Context, req store.ClaimRequest, fn LocalFunc) (store.Claim, error) {
	ctx, done := s.call(ctx)
	defer done()
	owner := req.Worker + "/" + nonce()
	opID := newOperationID(s.cockroach)
	rechecked := false
	again := func(err error) bool {
		if isUniqueViolation(err) && !rechecked {
			rechecked = true
			return true
		}
		return claimAgain(err)
	}
	var c store.Claim
	err := s.do(ctx, "tx", again, func(ctx context.Context) error {
		err := s.txOnce(ctx, func(tx pgx.Tx) (err error) {
			c, err = s.runLocalTx(ctx, tx, req, owner, opID, fn)
			return err
		})
		switch {
		case errors.As(err, new(*store.AmbiguousCommitError)):
			s.log.WarnContext(ctx, "local commit ambiguous, re-running the claim", "err", err)
		case err == nil && c.Outcome == 0:
			return errMovedOn // a racer's insert is not visible yet: look again
		}
		return err
	})
	var exhausted *store.RetriesExhaustedError
	if errors.As(err, &exhausted) {
		exhausted.Op = "run local"
		if errors.Is(exhausted.Err, errMovedOn) {
			exhausted.Err = nil
		}
	}
	if err != nil {
		return store.Claim{}, err
	}
	s.metrics.outcome(ctx, req.Scope.Endpoint, c.Outcome.String())
	return c, nil
}

// runLocalTx is one attempt of RunLocal inside tx. A zero Outcome means the
// claim saw neither a record nor its own insert and must run again.
func (s *Store) runLocalTx(ctx context.Context, tx pgx.Tx, req store.ClaimRequest, owner string, opID uuid.UUID, fn LocalFunc) (store.Claim, error) {
	var (
		rec store.Record
		now time.Time
	)
	found, err := s.claimRow(ctx, tx, req, owner, opID, idempotency.InProgress, &rec, &now)
	if err != nil {
		return store.Claim{}, err
	}
	if !found {
		return store.Claim{}, s.checkFence(ctx, tx, req.Token)
	}
	if rec.LeaseOwner == owner && rec.Version == 1 {
		return s.completeIn(ctx, tx, store.Claim{Outcome: store.FirstRun, Record: rec}, newLease(rec, req), fn)
	}
	if rec.LeaseOwner == owner && rec.State == idempotency.Completed {
		// Our own commit, whose answer a lost connection hid.
		if rec.Attempts > 1 {
			return store.Claim{Outcome: store.TakenOver, Record: rec}, nil
		}
		return store.Claim{Outcome: store.FirstRun, Record: rec}, nil
	}
	c, take, err := classify(req, rec, now)
	if err != nil || !take {
		return c, err
	}
	lease, u := s.takeover(req, rec, owner)
	ok, err := u.run(ctx, s, tx)
	if err != nil {
		return store.Claim{}, err
	}
	if !ok {
		return store.Claim{}, nil // moved on since our read: look again
	}
	lease.Attempts++
	c.Outcome = store.TakenOver
	return s.completeIn(ctx, tx, c, lease, fn)
}

// completeIn runs fn and records COMPLETED under l, inside tx, and returns
// c carrying the completed record and the lease after the update.
func (s *Store) completeIn(ctx context.Context, tx pgx.Tx, c store.Claim, l *store.Lease, fn LocalFunc) (store.Claim, error) {
	snap, err := fn(ctx, tx, l.OperationID)
	if err != nil {
		return store.Claim{}, err
	}
	res := store.Result{State: idempotency.Completed, Snapshot: snap}
	status, headers, body, resourceID, errSummary, err := snapshotArgs(res)
	if err != nil {
		return store.Claim{}, err
	}
	u := s.prepareUpdate(l, l.Owner, "finish", finishSet, `state IN ('PENDING', 'IN_PROGRESS')`,
		string(res.State), status, headers, body, snap.BodyOmitted, resourceID, errSummary, l.TTL.Milliseconds())
	ok, err := u.run(ctx, s, tx)
	if err != nil {
		return store.Claim{}, fmt.Errorf("sqlstore: save result: %w", err)
	}
	if !ok {
		return store.Claim{}, fmt.Errorf("%w: operation %s", store.ErrLostOwnership, l.OperationID)
	}
	c.Lease = l
	c.Record.State, c.Record.Snapshot, c.Record.Version = idempotency.Completed, snap, l.Version
	return c, nil
}
