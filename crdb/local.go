package crdb

import (
	"context"
	"errors"
	"fmt"

	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/idempotency"
)

// LocalFunc does the caller's business writes inside the claim's
// transaction and returns the response to store. It may run more than once
// (the transaction is retried whole) and must have no effect outside tx.
type LocalFunc func(ctx context.Context, tx pgx.Tx, opID uuid.UUID) (Snapshot, error)

// RunLocal claims a key, runs fn and records COMPLETED, all in one
// serializable transaction: for business writes that live in the same
// database, the claim, the writes and the result commit together or not at
// all. If fn or saving the result fails, everything rolls back and the key
// stays unclaimed.
//
// When the key exists, fn does not run and the Claim says why (Replayed,
// Mismatch, InFlight, Unresolved); an expired lease or retryable failure is
// taken over first and then run the same way. A commit lost with the
// connection is resolved by running the claim again: the second run sees
// its own COMPLETED record (or nothing) and answers accordingly.
func (s *Store) RunLocal(ctx context.Context, req ClaimRequest, fn LocalFunc) (Claim, error) {
	owner := req.Worker + "/" + nonce()
	opID := uuid.New()
	for round := 0; round < 8; round++ {
		var (
			c    Claim
			snap Snapshot
			now  time.Time
		)
		err := s.RunTx(ctx, func(tx pgx.Tx) error {
			c, snap = Claim{}, Snapshot{}
			var rec Record
			var inserted bool
			found, err := s.claimRow(ctx, tx, req, owner, opID, idempotency.InProgress, &rec, &inserted, &now)
			if err != nil {
				return err
			}
			if !found {
				return s.checkFence(ctx, tx, req.Token)
			}
			c.Record = rec
			if !inserted {
				return nil // decided below, outside the transaction
			}
			c.Outcome = FirstRun
			snap, c.Lease, err = s.completeIn(ctx, tx, newLease(rec, req), fn)
			return err
		})
		var amb *AmbiguousCommitError
		switch {
		case errors.As(err, &amb):
			s.log.WarnContext(ctx, "local commit ambiguous, re-running the claim", "err", err)
			continue
		case isUniqueViolation(err):
			// Possibly a serialization failure in disguise (a business row
			// committed by a racer): re-read through the claim, then decide.
			continue
		case err != nil:
			return Claim{}, err
		case c.Outcome == FirstRun:
			c.Record.State, c.Record.Snapshot = idempotency.Completed, snap
			s.metrics.outcome(ctx, req.Scope.Endpoint, FirstRun.String())
			return c, nil
		case c.Record.OperationID == uuid.Nil:
			continue // no record and the fence agreed: a racer's insert; look again
		}
		rec := c.Record
		if rec.LeaseOwner == owner && rec.State == idempotency.Completed {
			// Our own commit, whose answer the connection lost.
			c.Outcome = FirstRun
			s.metrics.outcome(ctx, req.Scope.Endpoint, FirstRun.String())
			return c, nil
		}
		c, retry, err := s.decide(ctx, req, rec, now)
		if err != nil {
			return c, err
		}
		if retry {
			continue
		}
		if c.Lease == nil {
			s.metrics.outcome(ctx, req.Scope.Endpoint, c.Outcome.String())
			return c, nil
		}
		// Taken over: run the business writes and complete under the lease.
		taken := c.Lease
		err = s.RunTx(ctx, func(tx pgx.Tx) error {
			var err error
			snap, c.Lease, err = s.completeIn(ctx, tx, taken, fn)
			return err
		})
		if err != nil {
			return Claim{}, err
		}
		c.Record.State, c.Record.Snapshot = idempotency.Completed, snap
		s.metrics.outcome(ctx, req.Scope.Endpoint, TakenOver.String())
		return c, nil
	}
	return Claim{}, errors.New("crdb: run local: no decision after 8 rounds of contention")
}

// completeIn runs fn and records COMPLETED under l, inside tx. l is not
// changed (tx may yet roll back); the lease after the update is returned.
func (s *Store) completeIn(ctx context.Context, tx pgx.Tx, l *Lease, fn LocalFunc) (Snapshot, *Lease, error) {
	snap, err := fn(ctx, tx, l.OperationID)
	if err != nil {
		return Snapshot{}, nil, err
	}
	res := Result{State: idempotency.Completed, Snapshot: snap}
	status, headers, body, resourceID, errSummary, err := snapshotArgs(res)
	if err != nil {
		return Snapshot{}, nil, err
	}
	saved := *l
	u := s.prepareUpdate(&saved, l.Owner, "finish", finishSet, `state IN ('PENDING', 'IN_PROGRESS')`,
		string(res.State), status, headers, body, snap.BodyOmitted, resourceID, errSummary, l.ttl.Milliseconds())
	ok, err := u.run(ctx, s, tx)
	if err != nil {
		return Snapshot{}, nil, fmt.Errorf("crdb: save result: %w", err)
	}
	if !ok {
		return Snapshot{}, nil, fmt.Errorf("%w: operation %s", ErrLostOwnership, l.OperationID)
	}
	return snap, &saved, nil
}
