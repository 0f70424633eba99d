package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/retry"
	"github.com/idemcoord/idemcoord/store"
)

// storeRetryAfter is the Retry-After of a 503 while the store is
// unreachable (exchange.StoreRetryAfter).
const storeRetryAfter = exchange.StoreRetryAfter

// storeCallTimeout bounds one store call: a store that does not answer in
// this long is treated as down (503), not waited on forever.
var storeCallTimeout = retry.Default.Store.Total

// call is one coordinated request as it moves through the protocol: the
// stages' shared value (exchange.Request) and what only the pipeline
// keeps.
type call struct {
	exchange.Request
	// waitUntil is when a wait for the run in flight ends (await.go),
	// set the first time the request finds its operation in flight.
	waitUntil time.Time
}

// resolve asks the upstream about an OUTCOME_UNKNOWN operation and records
// the verdict. It reports whether the record moved on (claim again).
func (g *Gateway) resolve(ctx context.Context, c *call, tok fencing.Token, rec store.Record) bool {
	in := Invocation{Request: c.R, Body: c.Body, OperationID: rec.OperationID, Actor: c.Actor, Endpoint: c.Endpoint}
	var res store.Result
	switch v, a := g.next.Resolve(ctx, in); v {
	case Ran:
		// Classified like a live answer: a retryable status re-runs on the
		// next retry, exactly as if the upstream had answered in time.
		res = g.result(c, a)
	case NotRun:
		res = store.Result{State: idempotency.RetryableFailure, ErrorSummary: "upstream confirmed it never ran"}
	default:
		return false
	}
	sctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
	err := g.store.Resolve(sctx, rec, tok, res)
	cancel()
	if err != nil && !errors.Is(err, store.ErrLostOwnership) {
		g.log.WarnContext(ctx, "resolve failed", "operation_id", rec.OperationID, "err", err)
		return false
	}
	g.waits.kick(rec.OperationID)
	g.log.InfoContext(ctx, "outcome unknown resolved", "operation_id", rec.OperationID, "state", res.State)
	return true
}
