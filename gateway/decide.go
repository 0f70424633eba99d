package gateway

import (
	"context"
	"net/http"
	"time"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/gateway/admission"
	"github.com/idemcoord/idemcoord/gateway/async"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/gateway/replay"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// decide acts on a claim: one arm per store outcome. again asks for
// another claim round (after an unknown outcome was resolved, or a run
// lost to a takeover).
func (g *Gateway) decide(ctx context.Context, c *call, req store.ClaimRequest, claim store.Claim) (again bool) {
	exchange.AdvertiseClaim(c.W, claim)
	if c.Policy.Async && claim.Outcome == store.Unresolved && g.upstream.Resolve(ctx, &c.Request, req.Token, claim.Record) {
		return true
	}
	if (claim.Outcome == store.Replayed || claim.Outcome == store.InFlight) && g.admission.Limited(&c.Request) {
		return false
	}
	exchange.SetKeyStatus(c.W, exchange.ClaimKeyStatus(claim))
	if c.Policy.Async && g.asyncRetry(ctx, c, claim) {
		return false
	}
	switch claim.Outcome {
	case store.Replayed:
		g.replay.Replay(ctx, &c.Request, claim.Record, c.Shadow == nil)
	case store.Mismatch:
		c.Refuse("fingerprint_conflict", admission.Mismatch(&c.Request, req, claim.Record))
	case store.InFlight:
		return g.inFlight(ctx, c, req, claim)
	case store.Unresolved:
		return g.unresolved(ctx, c, req.Token, claim.Record)
	case store.WindowPassed:
		g.windowPassed(c, claim.Record) // window.go
	case store.FirstRun, store.TakenOver:
		return g.firstRun(ctx, c, claim)
	}
	return false
}

// asyncRetry answers a retry of an async request: a cancelled operation
// replays its cancellation (never a second task), and any other that
// exists gets its task (202), whatever its state. It reports whether it
// answered.
func (g *Gateway) asyncRetry(ctx context.Context, c *call, claim store.Claim) bool {
	rec := claim.Record
	switch {
	case claim.Outcome == store.Replayed && rec.State == idempotency.Cancelled:
		replay.Cancelled(ctx, &c.Request, rec)
	case claim.Outcome == store.Replayed || claim.Outcome == store.InFlight || claim.Outcome == store.Unresolved:
		exchange.SetKeyStatus(c.W, exchange.RecordKeyStatus(rec))
		g.metrics.request(ctx, c.Endpoint.Name, "async_accepted", c.Start)
		async.WriteAccepted(c.W, rec.OperationID, string(rec.State))
	default:
		return false
	}
	return true
}

// inFlight waits for the run in flight (awaitRun) and decides on what it
// left, or answers 409 in-progress with the run's expected time left.
func (g *Gateway) inFlight(ctx context.Context, c *call, req store.ClaimRequest, claim store.Claim) (again bool) {
	done, again, answered, leaseLeft := g.awaitRun(c, claim)
	if done != nil {
		return g.decide(ctx, c, req, store.Claim{Outcome: store.Replayed, Record: *done})
	}
	if again || answered {
		return again
	}
	rec := claim.Record
	c.RefuseWait("in_progress", exchange.Problem{Type: "in-progress", Title: "operation in progress",
		Detail: "another request with this key is being processed", Status: http.StatusConflict,
		OperationID: rec.OperationID.String(), OperationState: string(rec.State)}, g.upstream.RetryAfter(c.Endpoint.Name, leaseLeft))
	return false
}

// unresolved asks the upstream about an outcome the store does not know
// (upstream.Resolve) and claims again once it is known, or answers 409
// outcome-unknown.
func (g *Gateway) unresolved(ctx context.Context, c *call, tok fencing.Token, rec store.Record) (again bool) {
	if g.upstream.Resolve(ctx, &c.Request, tok, rec) {
		return true
	}
	c.RefuseWait("outcome_unknown", exchange.Problem{Type: "outcome-unknown", Title: "operation outcome unknown",
		Detail: "the upstream may have run it; it is being reconciled", Status: http.StatusConflict,
		OperationID: rec.OperationID.String(), OperationState: string(idempotency.OutcomeUnknown)}, time.Second)
	return false
}

// firstRun runs the intent the claim leased: queued (202) on an async
// endpoint, else run upstream and recorded.
func (g *Gateway) firstRun(ctx context.Context, c *call, claim store.Claim) (again bool) {
	result := "first_run"
	if claim.Outcome == store.TakenOver {
		result = "takeover"
	}
	if c.Policy.Async {
		g.async.Accept(&c.Request, claim, result)
		return false
	}
	return g.upstream.Run(ctx, &c.Request, claim, result)
}
