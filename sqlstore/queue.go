package sqlstore

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// SaveRequest stores what is needed to run l's operation without its
// client (see migrations/portable/0003_async_requests.sql). Call it after
// the claim and before answering 202: once it returns, a live instance can
// take the operation over when the lease expires. A second save for the
// same operation keeps the first (the request of one intent does not
// change). The request may hold personal data: Purge deletes it.
func (s *Store) SaveRequest(ctx context.Context, l *store.Lease, request []byte) error {
	save := func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, `INSERT INTO async_requests (operation_id, actor_scope, request, created_at)
			VALUES ($1, $2, $3, COALESCE($4::TIMESTAMPTZ, now())) ON CONFLICT (operation_id) DO NOTHING`,
			l.OperationID, l.Scope.Actor, request, s.now())
		return err
	}
	// Idempotent: an ambiguous save is settled by saving again.
	err := s.do(ctx, "save_request", rerunnable, func(ctx context.Context) error { return stmtOutcome(save(ctx)) })
	if err != nil {
		return fmt.Errorf("sqlstore: save request: %w", err)
	}
	return nil
}

// DropRequest deletes an operation's stored request. The gateway calls it
// once the operation's result is recorded; Cleanup removes what is left.
func (s *Store) DropRequest(ctx context.Context, opID uuid.UUID) error {
	err := s.exec1(ctx, "drop_request", func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, `DELETE FROM async_requests WHERE operation_id = $1`, opID)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlstore: drop request: %w", err)
	}
	return nil
}

// TakeOver takes over an operation found by Stranded or Fenced (with
// req.TakeOverFenced), for req's worker,
// token, lease and TTL (req.Scope and req.Fingerprint are not used: the
// record is the request's own). It is the same fenced, version-conditioned
// takeover Begin makes, so of several instances only one wins; the others
// get ErrLostOwnership. The Claim is TakenOver with Record as found: the
// caller resumes exactly as after Begin's takeover, through the resolve
// rules when the crashed attempt may have sent.
//
// It returns *fencing.StaleEpochError when the token's epoch is not the
// shard's, and an error wrapping store.ErrDownstreamWindowPassed, having
// changed nothing, when req.DownstreamWindow is set and the operation was
// first claimed longer ago than that by the database's clock.
func (s *Store) TakeOver(ctx context.Context, rec store.Record, req store.ClaimRequest) (store.Claim, error) {
	if !running(rec.State) && rec.State != idempotency.RetryableFailure {
		return store.Claim{Record: rec}, fmt.Errorf("%w: operation %s is %s", store.ErrLostOwnership, rec.OperationID, rec.State)
	}
	if err := s.checkWindow(ctx, rec, req.DownstreamWindow); err != nil {
		return store.Claim{Record: rec}, err
	}
	req.Scope = rec.Scope
	lease, u := s.takeover(req, rec, req.Worker+"/"+nonce())
	ok, err := s.runUpdate(ctx, u)
	if err = s.owned(ctx, lease, "takeover", ok, err); err != nil {
		return store.Claim{Record: rec}, err
	}
	lease.Attempts++
	s.metrics.outcome(ctx, rec.Scope.Endpoint, eventRecoveryTakeover) // not a client request
	c := store.Claim{Outcome: store.TakenOver, Record: rec, Lease: lease, Fenced: fencedOut(req, rec)}
	s.noteCrossing(ctx, store.EventTransferred, rec, req.Token, "taken over by async recovery")
	if c.Fenced {
		s.metrics.outcome(ctx, rec.Scope.Endpoint, eventFencedTakeover)
	}
	return c, nil
}
