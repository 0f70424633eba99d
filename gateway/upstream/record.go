package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/retry"
	"github.com/idemcoord/idemcoord/store"
)

// Recording a result that the store did not take. The upstream has
// answered and the client gets that answer; a result left unrecorded
// holds the key IN_PROGRESS and then, on an endpoint without a resolve
// path, OUTCOME_UNKNOWN for ever. So the gateway keeps trying, within
// retry.Default.Record: the first Finish and every later one share its
// attempts and its time (each Finish also within the store's call bound),
// so the store's own retries and these rounds add up to one budget.
var recordBudget = retry.Default.Record

// errInvalidStatus marks an answer whose status is not a final HTTP
// status (200-599): Go's client accepts any three digits, and a handler
// may call WriteHeader with anything. Such an answer came from a run, so
// its outcome is unknown; it is never stored or relayed.
var errInvalidStatus = errors.New("gateway: upstream answered an invalid status")

// checkStatus turns an answer with an invalid final status into an
// unknown outcome (errInvalidStatus, Sent).
func checkStatus(a Answer) Answer {
	if a.Err == nil && (a.Status < 200 || a.Status > 599) {
		return Answer{Err: fmt.Errorf("%w %d", errInvalidStatus, a.Status), Sent: true}
	}
	return a
}

// result classifies an answer by the endpoint's policy. Every path that
// learns an attempt's answer (the worker's live answer, a takeover's or a
// retry's resolve) classifies it here, so the recovery point it reports
// is kept whichever path it came by (complete.go).
func (s *Stage) result(c *exchange.Request, a Answer) store.Result {
	a = checkStatus(a)
	switch {
	case errors.Is(a.Err, errInvalidStatus):
		return store.Result{State: idempotency.OutcomeUnknown, ErrorSummary: "upstream answered an invalid status"}
	case a.Err != nil && a.Sent:
		return store.Result{State: idempotency.OutcomeUnknown, ErrorSummary: "upstream did not answer after the request was sent"}
	case a.Err != nil:
		return store.Result{State: idempotency.RetryableFailure, ErrorSummary: "upstream unreachable"}
	}
	if st, ok := stageOf(a.Header); ok && st.Cancelled() && c.Endpoint.CancelPath != "" {
		return Cancelled // the upstream's word: it cancelled, nothing took effect
	}
	state := c.Policy.Classify(a.Status)
	res := store.Result{State: state}
	if state == idempotency.Completed || state == idempotency.TerminalFailure {
		res.Snapshot = s.stored.Stored(c, snapshot(c.Policy, a), a.Body, state)
	} else {
		res.ErrorSummary = http.StatusText(a.Status)
	}
	res.Stage = recoveryPoint(c, a, state)
	return res
}

// errTakerRunning means another worker took the operation over and has
// not recorded anything yet: its outcome may still need this worker's
// answer.
var errTakerRunning = errors.New("gateway: operation taken over and still in progress")

// record stores the result of an execution through the lease. When the
// store fails (not a lost lease), the result is recorded again in the
// background, under the gateway's ownership (Close waits for it), with a
// doubling wait, within recordBudget; record still returns that first
// error, so the caller answers the client with what it knows.
//
// It returns nil when the result is recorded, by Finish or by settling a
// takeover's OUTCOME_UNKNOWN with it (see finish), an error wrapping
// store.ErrLostOwnership when the record holds another answer, and one
// wrapping fencing.ErrStaleEpoch, with no retry, when the fence refused
// it (the shard moved on). Either way the retries waiting on the
// operation read its record at once (Config.Recorded).
func (s *Stage) record(ctx context.Context, c *exchange.Request, lease *store.Lease, res store.Result) error {
	defer s.recorded(lease.OperationID)
	rb := recording{share: retry.NewShare(recordBudget), until: s.clock.Now().Add(recordBudget.Total)}
	err := s.finish(ctx, rb, c, lease, res)
	if err == nil || errors.Is(err, store.ErrLostOwnership) {
		return err
	}
	if errors.Is(err, fencing.ErrStaleEpoch) {
		// The shard moved to another region: no retry of this worker's
		// can record it (its token's epoch is over for good); the owner's
		// takeover settles the record.
		s.log.WarnContext(ctx, "result not recorded: the shard moved to another region", "operation_id", lease.OperationID,
			"key", c.Key, "err", err)
		return err
	}
	s.log.ErrorContext(ctx, "finish failed; recording again in the background", "operation_id", lease.OperationID,
		"key", c.Key, "err", err)
	if !s.bg.Go(func() { s.recordAgain(ctx, rb, c, lease, res, err) }) {
		// Close is waiting already: the caller's goroutine is the last
		// one this result will get.
		s.recordAgain(ctx, rb, c, lease, res, err)
	}
	return err
}

// recording is one result's recordBudget: the attempts and store time
// its Finish calls share, and when the whole effort ends by the gateway's
// clock (waits included).
type recording struct {
	share *retry.Share
	until time.Time
}

// recordAgain retries finish until the result is recorded, the record
// holds another answer, or rb is spent.
func (s *Stage) recordAgain(ctx context.Context, rb recording, c *exchange.Request, lease *store.Lease, res store.Result, last error) {
	for n := 1; ; n++ {
		if rb.share.Spent() || !s.clock.Now().Before(rb.until) {
			s.log.ErrorContext(ctx, "result never recorded: reconcile the operation", "operation_id", lease.OperationID,
				"key", c.Key, "state", res.State, "attempts", rb.share.Used(), "err", last)
			return
		}
		if err := clock.Sleep(ctx, s.clock, min(recordBudget.Step(n), rb.until.Sub(s.clock.Now()))); err != nil {
			return
		}
		if !s.clock.Now().Before(rb.until) {
			continue // ends above
		}
		err := s.finish(ctx, rb, c, lease, res)
		switch {
		case err == nil:
			s.log.InfoContext(ctx, "result recorded after a retry", "operation_id", lease.OperationID, "state", res.State)
			return
		case errors.Is(err, store.ErrLostOwnership):
			s.log.WarnContext(ctx, "result not recorded: operation taken over", "operation_id", lease.OperationID, "key", c.Key)
			return
		}
		last = err
	}
}

// finish records res through the lease. When the operation was taken over
// meanwhile (this worker stalled, or its Finish kept failing, past the
// lease), the taker could not know what this worker's send did: on an
// endpoint without a resolve path, or when the upstream could not tell,
// it recorded OUTCOME_UNKNOWN. This worker holds the answer of that send,
// so it settles the unknown outcome with it (sqlstore.Store.Resolve,
// conditioned on the version it read: a concurrent resolver wins or
// loses cleanly).
//
// It returns nil when res is recorded; an error wrapping
// store.ErrLostOwnership when the record holds another answer (or this
// one, recorded by someone else); errTakerRunning while a taker holds the
// operation without a result; any other error is the store's.
func (s *Stage) finish(ctx context.Context, rb recording, c *exchange.Request, lease *store.Lease, res store.Result) error {
	sctx, call := rb.share.Start(ctx, max(min(storeCallTimeout, rb.until.Sub(s.clock.Now())), time.Millisecond))
	defer call.End()
	err := s.claims.Finish(sctx, lease, res)
	if !errors.Is(err, store.ErrLostOwnership) || res.State == idempotency.OutcomeUnknown {
		// An unknown outcome is no answer: nothing to settle another
		// record with.
		return err
	}
	rec, lerr := s.claims.Lookup(sctx, c.Actor, lease.OperationID)
	switch {
	case lerr != nil:
		return fmt.Errorf("gateway: reading the record after a takeover: %w", lerr)
	case rec.State == idempotency.InProgress || rec.State == idempotency.Pending:
		return errTakerRunning
	case rec.State != idempotency.OutcomeUnknown:
		return err
	}
	if rerr := s.claims.Resolve(sctx, rec, lease.Token, res); rerr != nil {
		if errors.Is(rerr, store.ErrLostOwnership) || errors.Is(rerr, store.ErrNotUnknown) {
			return errTakerRunning // moved on meanwhile: look again
		}
		return rerr
	}
	s.log.InfoContext(ctx, "outcome unknown resolved with the answer this worker holds", "operation_id", lease.OperationID,
		"state", res.State)
	return nil
}
