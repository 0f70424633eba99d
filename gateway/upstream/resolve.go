package upstream

import (
	"context"
	"errors"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// Resolve asks the upstream about an OUTCOME_UNKNOWN operation and records
// the verdict. It reports whether the record moved on (claim again).
func (s *Stage) Resolve(ctx context.Context, c *exchange.Request, tok fencing.Token, rec store.Record) bool {
	in := Invocation{Request: c.R, Body: c.Body, OperationID: rec.OperationID, Actor: c.Actor, Endpoint: c.Endpoint}
	var res store.Result
	switch v, a := s.next.Resolve(ctx, in); v {
	case Ran:
		// Classified like a live answer: a retryable status re-runs on the
		// next retry, exactly as if the upstream had answered in time.
		res = s.result(c, a)
	case NotRun:
		res = store.Result{State: idempotency.RetryableFailure, ErrorSummary: "upstream confirmed it never ran"}
	default:
		return false
	}
	sctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
	err := s.claims.Resolve(sctx, rec, tok, res)
	cancel()
	if err != nil && !errors.Is(err, store.ErrLostOwnership) {
		s.log.WarnContext(ctx, "resolve failed", "operation_id", rec.OperationID, "err", err)
		return false
	}
	s.recorded(rec.OperationID)
	s.log.InfoContext(ctx, "outcome unknown resolved", "operation_id", rec.OperationID, "state", res.State)
	return true
}

// SettleTaken settles a synchronous operation taken over from a fenced
// holder without its request: from the resolve path's verdict alone. It
// never runs the intent (the store did not keep the request); a retry
// does, once the verdict says it never ran.
func (s *Stage) SettleTaken(ctx context.Context, c *exchange.Request, lease *store.Lease) {
	in := Invocation{Request: c.R, Body: c.Body, OperationID: lease.OperationID, Actor: c.Actor, Endpoint: c.Endpoint}
	var res store.Result
	switch v, a := s.next.Resolve(ctx, in); v {
	case Ran:
		res = s.result(c, a)
	case NotRun:
		res = store.Result{State: idempotency.RetryableFailure, ErrorSummary: "upstream confirmed it never ran"}
	default:
		res = store.Result{State: idempotency.OutcomeUnknown,
			ErrorSummary: "taken over from a region that lost the shard; upstream state undetermined"}
	}
	// record wakes the retries waiting on it.
	if err := s.record(ctx, c, lease, res); err != nil && !errors.Is(err, store.ErrLostOwnership) {
		s.log.WarnContext(ctx, "fenced operation's verdict not recorded", "operation_id", in.OperationID, "err", err)
		return
	}
	s.results(ctx, c.Endpoint.Name, string(res.State))
}

// RunQueued runs an async intent under its claim (the 202 was answered, or
// the run is recovery's) and records the result, in the caller's
// goroutine. It reports whether the result is recorded (the stored request
// may go).
func (s *Stage) RunQueued(ctx context.Context, c *exchange.Request, claim store.Claim) (recorded bool) {
	in := Invocation{Request: c.R, Body: c.Body, OperationID: claim.Lease.OperationID, Actor: c.Actor, Endpoint: c.Endpoint}
	a, res, _, err := s.perform(ctx, c, claim, in)
	if a.Err != nil {
		s.log.WarnContext(ctx, "async execution failed", "operation_id", in.OperationID, "err", exchange.Redact(a.Err))
	}
	switch {
	case errors.Is(err, store.ErrLostOwnership):
		// Taken over, or cancelled (the DELETE): the record holds the
		// answer that counts, and perform said so.
	case err != nil:
		s.log.ErrorContext(ctx, "async run not recorded", "operation_id", in.OperationID, "err", err)
	}
	s.results(ctx, c.Endpoint.Name, string(res.State))
	return err == nil
}
