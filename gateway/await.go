package gateway

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// awaitRun holds a retry that found its operation in flight for up to the
// endpoint's in_progress.wait (counted once per request, from the first
// time it found the run in flight), instead of answering 409 at once.
//
// When the run finished in time with an answer to replay (COMPLETED or
// TERMINAL_FAILURE), it returns that record as done: the watch read it
// once for every waiter of the operation, so the caller replays it without
// another store round trip (a thousand waiters woken by one finish make no
// thousand claims). It reports again when the run ended otherwise in time
// (a retryable failure, an unknown outcome, an expired lease, the record
// gone): the caller claims once more, and that claim decides as any retry
// would (a takeover of a dead worker's claim, a reconcile).
// answered is set when the client went away: nothing is written. Otherwise
// the caller answers 409 as without a wait, with leaseLeft the lease the
// run had left when last read. An endpoint without a wait, a shadow-mode
// call and a full waiter list get that 409 at once.
func (g *Gateway) awaitRun(c *call, claim store.Claim) (done *store.Record, again, answered bool, leaseLeft time.Duration) {
	leaseLeft = claim.RetryAfter
	wait := c.Endpoint.InProgress.Wait
	if wait <= 0 || c.Shadow != nil || c.Policy.Async {
		return nil, false, false, leaseLeft
	}
	if c.waitUntil.IsZero() {
		c.waitUntil = g.clock.Now().Add(wait)
	}
	rec, outcome := g.waits.wait(c.R.Context(), c.Endpoint.Name, claim.Record, c.waitUntil)
	switch outcome {
	case waitFinished:
		if replayable(claim.Record, rec) {
			rec.Scope.Key = claim.Record.Scope.Key
			// What the claim it stands for would have put on the request span.
			traceDecision(c.R.Context(), store.Replayed)
			return &rec, false, false, 0
		}
		return nil, true, false, 0
	case waitGone:
		g.metrics.request(c.R.Context(), c.Endpoint.Name, "client_gone", c.Start)
		g.log.InfoContext(c.R.Context(), "client went away while waiting for the run in flight",
			"endpoint", c.Endpoint.Name, "operation_id", claim.Record.OperationID)
		return nil, false, true, 0
	case waitFull:
		g.log.InfoContext(c.R.Context(), "waiters at their limit: answered 409 at once", "endpoint", c.Endpoint.Name,
			"operation_id", claim.Record.OperationID)
	}
	if left := rec.LeaseExpiresAt.Sub(g.clock.Now()); left > 0 {
		leaseLeft = left
	}
	return nil, false, false, leaseLeft
}

// replayable reports whether last, the record a wait last read, is the
// answer a claim by the waiter would replay: the same operation as the
// one found in flight (so the same key, fingerprint and first-sent time
// the claim already matched), now resting at a result a retry replays.
// Anything else (a retryable failure to take over, an unknown outcome, a
// lease that ran out, a record read by no one) goes back to the claim.
func replayable(inFlight, last store.Record) bool {
	if last.OperationID != inFlight.OperationID || last.KeyHash != inFlight.KeyHash ||
		last.Scope.Actor != inFlight.Scope.Actor || last.Scope.Endpoint != inFlight.Scope.Endpoint {
		return false
	}
	return last.State == idempotency.Completed || last.State == idempotency.TerminalFailure
}

// operationWait reads the wait query parameter of GET
// /v1/operations/{id}: a Go duration ("3s", "500ms") or whole seconds
// ("3"), from 0 to config.MaxInProgressWait. Absent is 0: answer at once.
func operationWait(r *http.Request) (time.Duration, error) {
	v := r.URL.Query().Get("wait")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		n, nerr := strconv.Atoi(v)
		if nerr != nil {
			return 0, exchange.NewInvalid(fmt.Sprintf("wait: %q is neither a duration (3s, 500ms) nor whole seconds", v))
		}
		d = time.Duration(min(n, 1<<20)) * time.Second // no overflow into range
	}
	switch {
	case d < 0:
		return 0, exchange.NewInvalid(fmt.Sprintf("wait: must not be negative, got %s", v))
	case d > config.MaxInProgressWait:
		return 0, exchange.NewInvalid(fmt.Sprintf("wait: at most %s, got %s", config.FormatDuration(config.MaxInProgressWait), v))
	}
	return d, nil
}
