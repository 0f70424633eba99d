package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// leaseOf builds a lease handle on a record as read, to condition an update
// on exactly that version.
func leaseOf(rec store.Record, tok fencing.Token) *store.Lease {
	return &store.Lease{Scope: rec.Scope, KeyHash: rec.KeyHash, OperationID: rec.OperationID, Owner: rec.LeaseOwner,
		Version: rec.Version, Token: tok, LastStage: rec.LastStage, Attempts: rec.Attempts,
		TTL: recordSnapshotTTL(rec)}
}

// Resolve settles an OUTCOME_UNKNOWN operation once the downstream has
// answered for it by operation id: COMPLETED or TERMINAL_FAILURE when it
// ran, RETRYABLE_FAILURE when it provably did not (the next retry runs it).
// rec is the record as read; the update is conditioned on its version, so
// two resolvers cannot both win. It returns ErrLostOwnership when the record
// moved on, ErrNotUnknown when it is not OUTCOME_UNKNOWN.
func (s *Store) Resolve(ctx context.Context, rec store.Record, tok fencing.Token, res store.Result) error {
	u, err := s.prepareResolve(rec, tok, res)
	if err != nil {
		return err
	}
	ok, err := s.runUpdate(ctx, u)
	if err = s.owned(ctx, u.l, "resolve", ok, err); err != nil {
		return err
	}
	s.metrics.outcome(ctx, rec.Scope.Endpoint, "outcome_unknown_resolved")
	return nil
}

func (s *Store) prepareResolve(rec store.Record, tok fencing.Token, res store.Result) (fencedUpdate, error) {
	if rec.State != idempotency.OutcomeUnknown {
		return fencedUpdate{}, store.ErrNotUnknown
	}
	if err := idempotency.Transition(idempotency.OutcomeUnknown, res.State); err != nil || res.State == idempotency.InProgress {
		return fencedUpdate{}, fmt.Errorf("sqlstore: resolve: %w", errors.Join(err, errors.New("state must be a result")))
	}
	status, headers, body, resourceID, errSummary, err := snapshotArgs(res)
	if err != nil {
		return fencedUpdate{}, err
	}
	l := leaseOf(rec, tok)
	return s.prepareUpdate(l, l.Owner, "resolve", finishSet, `state = 'OUTCOME_UNKNOWN'`,
		string(res.State), status, headers, body, res.Snapshot.BodyOmitted, resourceID, errSummary, l.TTL.Milliseconds()), nil
}

// Lookup returns the operation with id opID if it belongs to actor. Another
// actor's operation is ErrNotFound: its existence is not revealed.
func (s *Store) Lookup(ctx context.Context, actor string, opID uuid.UUID) (store.Record, error) {
	ctx, done := s.call(ctx) // a deadline for every statement: a frozen primary keeps its connections open
	defer done()
	var rec store.Record
	err := scanRecord(s.pool.QueryRow(ctx, `SELECT `+recordCols+` FROM idempotency_records
		WHERE operation_id = $1 AND actor_scope = $2`, opID, actor), &rec)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Record{}, store.ErrNotFound
	}
	return rec, err
}

// AdminLookup returns any operation by id, for an operator, and writes the
// access to the repair audit in the same transaction.
func (s *Store) AdminLookup(ctx context.Context, operator, reason string, opID uuid.UUID) (store.Record, error) {
	var rec store.Record
	err := s.RunTx(ctx, func(tx pgx.Tx) error {
		err := scanRecord(tx.QueryRow(ctx, `SELECT `+recordCols+` FROM idempotency_records WHERE operation_id = $1`, opID), &rec)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		return s.audit(ctx, tx, operator, "lookup", reason, &opID, rec.Scope.Actor, "")
	})
	return rec, err
}

// ReconcileUnknown is the operator's resolution of an OUTCOME_UNKNOWN
// operation, found by id after checking the downstream by hand. The change
// and its audit row commit in one transaction: no repair goes unrecorded.
func (s *Store) ReconcileUnknown(ctx context.Context, operator, reason string, opID uuid.UUID, res store.Result) error {
	if err := checkOperator(operator, reason); err != nil {
		return err
	}
	return s.RunTx(ctx, func(tx pgx.Tx) error {
		var rec store.Record
		err := scanRecord(tx.QueryRow(ctx, `SELECT `+recordCols+` FROM idempotency_records WHERE operation_id = $1`, opID), &rec)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		var tok fencing.Token
		tok.Shard = rec.Token.Shard
		err = tx.QueryRow(ctx, `SELECT epoch, owner_region FROM shard_fences WHERE shard = $1`, tok.Shard).Scan(&tok.Epoch, &tok.Region)
		if err != nil {
			return fmt.Errorf("sqlstore: read fence: %w", err)
		}
		u, err := s.prepareResolve(rec, tok, res)
		if err != nil {
			return err
		}
		ok, err := u.run(ctx, s, tx)
		if err = s.owned(ctx, u.l, "reconcile", ok, err); err != nil {
			return err
		}
		return s.audit(ctx, tx, operator, "reconcile", reason, &opID, rec.Scope.Actor, string(res.State))
	})
}
