package upstream

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/drillpoint"
	"github.com/idemcoord/idemcoord/store"
)

// stageSending is the recovery point recorded before an upstream call on
// endpoints without a resolve path: a takeover that finds it knows the
// call may have been sent; one that does not knows it was not.
const stageSending = "sending"

// Run executes the intent under the claim's lease, records the result and
// answers the client. again asks the caller to claim once more: the
// operation was taken over meanwhile, and its record now holds the answer
// that counts (or says it is still in progress).
func (s *Stage) Run(ctx context.Context, c *exchange.Request, claim store.Claim, result string) (again bool) {
	in := Invocation{Request: c.R, Body: c.Body, OperationID: claim.Lease.OperationID, Actor: c.Actor, Endpoint: c.Endpoint,
		opID: claim.Lease.OperationID.String()}
	a, res, replayed, err := s.perform(ctx, c, claim, in)
	if err != nil {
		if errors.Is(err, store.ErrLostOwnership) {
			return true
		}
		if !a.Sent && a.Status == 0 {
			c.StoreDown(err) // nothing was sent upstream
			return false
		}
		// The upstream answered but the store did not take the result. On
		// an endpoint with a resolve path that answer is never given
		// unrecorded: whoever settles the record (this worker's background
		// re-recording, or a takeover that asks the resolve path) may store
		// another body, and the client would hold an answer no retry gets
		// (I7). The client is told to retry with the same key instead. A
		// shadow endpoint honours no key, so its client gets the upstream's
		// answer whatever the store kept.
		if c.Endpoint.ResolvePath != "" && c.Shadow == nil {
			s.results(ctx, c.Endpoint.Name, string(res.State))
			if errors.Is(err, fencing.ErrStaleEpoch) {
				s.ranWhileMoved(ctx, c, in)
			} else {
				s.ranUnrecorded(c, in, err)
			}
			return false
		}
		// Without a resolve path the answer this worker holds is the only
		// one there is: the record stays in progress, this worker keeps
		// recording it in the background, and the client gets it.
	}
	s.results(ctx, c.Endpoint.Name, string(res.State))
	c.Outcomes.Count(ctx, c.Endpoint.Name, result, c.Start)
	if errors.Is(a.Err, errInvalidStatus) {
		s.log.WarnContext(ctx, "upstream answered an invalid status", "operation_id", in.OperationID, "key", c.Key, "err", a.Err)
		exchange.WriteProblem(c.W, exchange.Problem{Type: "upstream-invalid-answer", Title: "upstream answered an invalid status",
			Detail: "the upstream ran but its answer is not valid HTTP; retry with the same key",
			Status: http.StatusBadGateway, OperationID: in.opID, OperationState: string(res.State)}, time.Second)
		return false
	}
	if res.State == idempotency.OutcomeUnknown {
		s.log.WarnContext(ctx, "upstream outcome unknown", "operation_id", in.OperationID, "key", c.Key, "err", exchange.Redact(a.Err))
		exchange.WriteProblem(c.W, exchange.Problem{Type: "outcome-unknown", Title: "upstream outcome unknown",
			Detail: "the upstream did not answer in time; retry with the same key", Status: http.StatusGatewayTimeout,
			OperationID: in.opID, OperationState: string(res.State)}, time.Second)
		return false
	}
	if a.Err != nil {
		exchange.WriteProblem(c.W, exchange.Problem{Type: "upstream-unavailable", Title: "upstream unreachable",
			Status: http.StatusBadGateway, OperationID: in.opID,
			OperationState: string(res.State)}, time.Second)
		return false
	}
	writeAnswer(c.W, a, in.opID, replayed)
	return false
}

// ranWhileMoved answers a run whose result the fence refused: the
// upstream answered, but meanwhile the actor's shard moved to another
// region (this instance was paused or cut off past its lease), so this
// worker can never record the answer, and the record stays IN_PROGRESS
// until the owner takes it over. Acknowledging the answer would leave the
// client with a success the store does not hold (I7) and nobody to
// settle it: a client that has its answer never retries. The endpoint
// has a resolve path, so the owner's takeover learns the outcome from
// the upstream itself: the call is handed to the new owner (HandOff),
// which takes the operation over, records the outcome and answers it;
// where that cannot be done, the client is told to retry with the same
// key and gets the recorded answer there. (Without a resolve path the
// answer this worker holds is the only one there is, and it is given.)
func (s *Stage) ranWhileMoved(ctx context.Context, c *exchange.Request, in Invocation) {
	if s.handOff != nil && s.handOff(ctx, c) {
		s.log.InfoContext(ctx, "result refused by the fence: the shard moved during the run; handed to its new owner, which answered",
			"operation_id", in.OperationID, "key", c.Key)
		return
	}
	s.log.WarnContext(c.R.Context(), "result refused by the fence: the shard moved during the run; the owner settles it",
		"operation_id", in.OperationID, "key", c.Key)
	c.RefuseWait("ownership_moved", exchange.Problem{Type: "ownership-moving", Title: "the actor's ownership moved during the run",
		Detail: "the operation ran while the actor's shard moved to another region, which records its outcome; " +
			"retry with the same key to get the answer, never with a new key",
		Status: http.StatusServiceUnavailable, OperationID: in.opID,
		OperationState: string(idempotency.InProgress)}, exchange.OwnershipRetryAfter)
}

// ranUnrecorded answers a run whose result the store did not take (it
// was unreachable, or gave up): the upstream answered, this worker keeps
// trying to record the answer in the background (recordAgain), and a
// retry with the same key gets what the record ends up holding: this
// answer once recorded, or, after a takeover, the outcome the resolve path
// reports. The client is never handed an answer the record may contradict.
func (s *Stage) ranUnrecorded(c *exchange.Request, in Invocation, err error) {
	s.log.WarnContext(c.R.Context(), "result not recorded: the store did not take it; the client retries for the recorded answer",
		"operation_id", in.OperationID, "key", c.Key, "err", err)
	c.RefuseWait("result_unrecorded", exchange.Problem{Type: "store-unavailable", Title: "the operation ran but its result is not recorded yet",
		Detail: "the operation ran and its outcome is being recorded; retry with the same key to get the answer, " +
			"never with a new key",
		Status: http.StatusServiceUnavailable, OperationID: in.opID,
		OperationState: string(idempotency.InProgress)}, exchange.StoreRetryAfter)
}

// perform runs the intent (or, after a takeover of a crashed worker, finds
// out whether it already ran), keeping the lease alive meanwhile, and
// records the result. err is a store error: before anything was sent
// (a.Sent false, no status), or while recording the result (see record).
// An error wrapping store.ErrLostOwnership with nothing sent means the
// operation was taken over before this worker's send: it sent nothing.
func (s *Stage) perform(ctx context.Context, c *exchange.Request, claim store.Claim, in Invocation) (a Answer, res store.Result, replayed bool, err error) {
	lease := claim.Lease
	drillpoint.Hit(drillpoint.AfterClaim)
	if c.Endpoint.ResolvePath == "" && lease.LastStage == "" {
		// No way to ask the upstream later: leave a mark before sending.
		sctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
		err = s.claims.RecordStage(sctx, lease, stageSending)
		cancel()
		if err != nil {
			// Nothing is sent, and the client is told so; the mark may
			// have committed unseen, so the claim is released (unsent).
			s.unsent(ctx, c, lease, err)
			return Answer{}, store.Result{}, false, err
		}
	}
	guard := newLeaseGuard(s.claims, s.clock, lease, c.Policy.Lease, c.ClaimedAt)
	s.heartbeat(ctx, c, guard)
	a, res, replayed, err = s.execute(ctx, c, claim, in, guard)
	guard.stopHeartbeat()
	if err != nil {
		s.unsent(ctx, c, lease, err)
		return Answer{}, store.Result{}, false, err
	}
	drillpoint.Hit(drillpoint.AfterUpstream)
	err = s.record(ctx, c, lease, res) // retries waiting on it read the record now
	switch {
	case errors.Is(err, store.ErrLostOwnership):
		// Expected after a takeover (this worker was paused or slow past
		// its lease) or a cancel: the record's answer stands.
		s.log.WarnContext(ctx, "result not recorded: operation taken over or cancelled", "operation_id", in.OperationID, "key", c.Key)
	case err != nil:
		a.Sent = true
	}
	return a, res, replayed, err
}

// unsent handles a send refused because the lease could not be proven
// or its "sending" mark written (err): taken over, nothing to do; the
// store unreachable, release the claim (store.Claims.Release: now, or as
// soon as the store answers), so the next retry runs at once instead of
// waiting out the lease, and a "sending" mark that committed unseen never
// makes a takeover call the outcome of a request never sent unknown: the
// client is told nothing was executed, and the record must agree.
func (s *Stage) unsent(ctx context.Context, c *exchange.Request, lease *store.Lease, err error) {
	if errors.Is(err, store.ErrLostOwnership) {
		s.log.WarnContext(ctx, "not sent: operation taken over before the send", "operation_id", lease.OperationID, "key", c.Key)
		return
	}
	s.log.WarnContext(ctx, "not sent: lease could not be confirmed", "operation_id", lease.OperationID, "key", c.Key, "err", err)
	sctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
	defer cancel()
	if err := s.claims.Release(sctx, lease, "not sent: the lease could not be confirmed"); err != nil &&
		!errors.Is(err, store.ErrLostOwnership) {
		s.log.WarnContext(ctx, "claim not released yet: the store releases it once it answers", "operation_id",
			lease.OperationID, "key", c.Key, "err", err)
	}
	s.recorded(lease.OperationID)
}

// execute runs the intent. After a takeover of a crashed worker's claim,
// when the upstream may already have run it, it asks the upstream first
// (resolve path), or — without one — runs it only if the crashed worker
// provably never sent it. replayed is true when the answer is the final
// answer (COMPLETED or TERMINAL_FAILURE) the upstream kept of an earlier
// run; a retryable one is no replay, the next retry runs it again.
//
// Before sending, it proves the lease is still this worker's (see
// leaseGuard.ensure); err is set, and nothing sent, when it cannot.
func (s *Stage) execute(ctx context.Context, c *exchange.Request, claim store.Claim, in Invocation, guard *leaseGuard) (Answer, store.Result, bool, error) {
	prior := claim.Record.State
	crashed := claim.Outcome == store.TakenOver && (prior == idempotency.InProgress || prior == idempotency.Pending)
	unknown := func(why string) (Answer, store.Result, bool, error) {
		return Answer{Err: errors.New("gateway: " + why), Sent: true},
			store.Result{State: idempotency.OutcomeUnknown, ErrorSummary: why}, false, nil
	}
	switch {
	case crashed && c.Endpoint.ResolvePath != "":
		switch v, a := s.next.Resolve(ctx, in); v {
		case Ran:
			res := s.result(c, a)
			final := res.State.Terminal()
			return checkStatus(a), res, final, nil
		case Undetermined:
			return unknown("taken over; upstream state undetermined")
		}
	case crashed && claim.Record.LastStage == stageSending: // the record as the takeover found it
		return unknown("taken over after the request may have been sent; no resolve path")
	}
	if err := guard.ensure(ctx); err != nil {
		return Answer{}, store.Result{}, false, err
	}
	if c.Endpoint.CancelPath != "" || c.Endpoint.Completes() {
		in.Stage = func(st idempotency.Stage) { s.recordStage(ctx, c, guard, st) }
	}
	if c.Endpoint.Completes() {
		in.ResumeFrom = claim.Lease.LastStage // the recovery point (complete.go)
	}
	start := s.clock.Now()
	a := checkStatus(s.next.Execute(ctx, in))
	c.Shadow.MarkRelay()
	s.durations[c.Endpoint.Name].observe(s.clock.Now().Sub(start))
	return a, s.result(c, a), false, nil
}
