package gateway

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/gateway/admission"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/gateway/routing"
	"github.com/idemcoord/idemcoord/internal/retry"
	"github.com/idemcoord/idemcoord/store"
)

// The pipeline: every coordinated request passes these stages, in this
// order, and this file is the one place the order is written.
//
//  1. admission (gateway/admission): the key, the first-sent time, the
//     body within its cap and declared type, the fingerprint within its
//     budget; the per-actor limits, charged in decide.
//  2. routing (gateway/routing): the actor's owner region and fencing
//     token, once per round (Rounds, Route); forwards, redirects, holds
//     during a move or a failover, or refuses instead.
//  3. claim: the store's verdict on the key (claimRound).
//  4. decide (decide.go): one arm per store outcome, answering by
//     replay (gateway/replay: snapshot, reference, replay-expired), async
//     (202, the queue) or upstream (run, record), or claiming again.
//
// Each stage answers the client itself when it ends the request.

// newCall is the call of a request to ep by actor, started at start.
func (g *Gateway) newCall(w http.ResponseWriter, r *http.Request, ep *config.Endpoint, actor string, start time.Time) *call {
	return &call{Request: exchange.Request{W: w, R: r, Endpoint: ep, Policy: g.policies[ep.Name], Actor: actor, Start: start, Outcomes: g.outcomes}}
}

// coordinate runs the protocol of docs/http-contract.md for one request.
func (g *Gateway) coordinate(w http.ResponseWriter, r *http.Request, ep *config.Endpoint, actor string, start time.Time) {
	g.coordinateCall(g.newCall(w, r, ep, actor, start))
}

// coordinateCall runs the pipeline for c.
func (g *Gateway) coordinateCall(c *call) {
	// Once the coordinator has the request it carries it through to a
	// recorded outcome even if the client hangs up: a claim or a result
	// abandoned half-way would hold the key for a whole lease.
	ctx := exchange.Detach(c.R.Context())
	req, verdict := g.admission.Admit(&c.Request) // 1. admission
	switch verdict {
	case admission.Answered:
		return
	case admission.Uncoordinated:
		g.passthrough(c.W, c.R, c.Actor, c.Endpoint.Name, c.Start)
		return
	}
	// 2. routing, once per round: a stale fence is re-read once, and
	// resolving an unknown outcome (or losing a run to a takeover) is
	// followed by claiming again.
	end := g.routes.Rounds(ctx, &c.Request, retry.NewShare(retry.Default.Store), claimRounds, func(r routing.Round) routing.Step {
		return g.claimRound(ctx, c, req, r) // 3. claim, 4. decide
	})
	g.roundsEnded(c, end)
}

// claimRounds bounds a request's claim rounds (see routing.Stage.Rounds).
const claimRounds = 4

// claimRound claims the key with the round's token and decides on the
// store's verdict.
func (g *Gateway) claimRound(ctx context.Context, c *call, req store.ClaimRequest, r routing.Round) routing.Step {
	req.Token = r.Token
	sctx, done := r.Store(ctx)
	c.ClaimedAt = g.clock.Now()
	claim, err := g.store.Begin(sctx, req)
	done()
	switch {
	case errors.Is(err, fencing.ErrStaleEpoch):
		return routing.Stale(err)
	case errors.Is(err, store.ErrFingerprintVersion):
		// Stored by an instance with a newer fingerprint algorithm:
		// this one cannot compare. Another (upgraded) instance can.
		exchange.SetKeyStatus(c.W, KeyStatusInProgress)
		c.RefuseWait("in_progress", exchange.Problem{Type: "in-progress", Title: "cannot compare with the stored request",
			Detail: "the key's record was fingerprinted by a newer version; retry with the same key",
			Status: http.StatusConflict}, time.Second)
		return routing.Done
	case err != nil:
		c.StoreDown(err)
		return routing.Done
	}
	if g.decide(ctx, c, req, claim) {
		return routing.Again
	}
	return routing.Done
}

// roundsEnded answers a call whose rounds ended without a stage's answer.
func (g *Gateway) roundsEnded(c *call, end routing.End) {
	switch end.Ending {
	case routing.Answered, routing.Routed:
		// Answered, or forwarded, redirected or refused by routing.
	case routing.NotOwner, routing.FenceRefused:
		c.RegionUnavailable(end.Err) // another region owns the shard, or the fence kept refusing this one
	case routing.RoundsOut:
		// Resolved outcomes kept changing under us.
		exchange.SetKeyStatus(c.W, KeyStatusInProgress)
		c.RefuseWait("in_progress", exchange.Problem{Type: "in-progress", Title: "operation is changing state",
			Detail: "retry with the same key", Status: http.StatusConflict}, time.Second)
	default:
		c.StoreDown(end.Err)
	}
}

// passthrough sends an uncoordinated request upstream: an unmatched route,
// or a request without a key on an endpoint where the key is optional.
func (g *Gateway) passthrough(w http.ResponseWriter, r *http.Request, actor, endpoint string, start time.Time) {
	g.metrics.request(r.Context(), endpoint, "passthrough", start)
	if actor != "" {
		r.Header.Set(HeaderActor, actor)
	}
	g.next.Pass(w, r)
}
