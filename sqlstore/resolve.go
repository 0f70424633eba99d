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

// resolveSet is otherSet that also records the answer's recovery point
// ($19, store.Result.Stage) when it reports one: a resolve learns an
// attempt's answer as the worker would have, and keeps what it says done.
const resolveSet = otherSet + `, last_stage = CASE WHEN $19::TEXT = '' THEN last_stage ELSE $19::TEXT END`

// Resolve settles an OUTCOME_UNKNOWN operation once the downstream has
// answered for it by operation id: COMPLETED or TERMINAL_FAILURE when it
// ran, RETRYABLE_FAILURE when it provably did not (the next retry runs it)
// or when it answered so (res.Stage, the recovery point that answer
// reports, is recorded as the last stage).
// rec is the record as read; the update is conditioned on its version, so
// two resolvers cannot both win. It returns ErrLostOwnership when the record
// moved on, ErrNotUnknown when it is not OUTCOME_UNKNOWN.
func (s *Store) Resolve(ctx context.Context, rec store.Record, tok fencing.Token, res store.Result) error {
	u, err := s.prepareResolve(rec, tok, res, "resolve")
	if err != nil {
		return err
	}
	ok, err := s.runUpdate(ctx, u)
	if err = s.owned(ctx, u.l, "resolve", ok, err); err != nil {
		return err
	}
	s.metrics.outcome(ctx, rec.Scope.Endpoint, "outcome_unknown_resolved")
	s.noteCrossing(ctx, store.EventResolved, rec, tok, "resolved through the resolve path as "+string(res.State))
	return nil
}

// prepareResolve prepares op's settling of rec (OUTCOME_UNKNOWN as read)
// with res, under a writer identity of its own (otherSet).
func (s *Store) prepareResolve(rec store.Record, tok fencing.Token, res store.Result, op string) (fencedUpdate, error) {
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
	l, w := leaseOf(rec, tok), writerID(op)
	return s.prepareUpdate(l, w, op, resolveSet, `state = 'OUTCOME_UNKNOWN'`,
		string(res.State), status, headers, body, res.Snapshot.BodyOmitted, resourceID, errSummary, l.TTL.Milliseconds(),
		w, res.Stage), nil
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
	err := s.RunTx(ctx, func(tx pgx.Tx) (err error) {
		if rec, err = recordByOpID(ctx, tx, opID); err != nil {
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
		rec, err := recordByOpID(ctx, tx, opID)
		if err != nil {
			return err
		}
		tok, err := fenceOf(ctx, tx, rec.Token.Shard)
		if err != nil {
			return err
		}
		u, err := s.prepareResolve(rec, tok, res, "reconcile")
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

// recordByOpID reads the record of operation opID in tx;
// store.ErrNotFound when there is none.
func recordByOpID(ctx context.Context, tx pgx.Tx, opID uuid.UUID) (store.Record, error) {
	var rec store.Record
	err := scanRecord(tx.QueryRow(ctx, `SELECT `+recordCols+` FROM idempotency_records WHERE operation_id = $1`, opID), &rec)
	if errors.Is(err, pgx.ErrNoRows) {
		return rec, store.ErrNotFound
	}
	return rec, err
}

// fenceOf reads shard's fence in tx.
func fenceOf(ctx context.Context, tx pgx.Tx, shard int) (fencing.Token, error) {
	tok := fencing.Token{Shard: shard}
	err := tx.QueryRow(ctx, `SELECT epoch, owner_region FROM shard_fences WHERE shard = $1`, shard).Scan(&tok.Epoch, &tok.Region)
	if err != nil {
		return tok, fmt.Errorf("sqlstore: read fence: %w", err)
	}
	return tok, nil
}
