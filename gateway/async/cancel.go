package async

import (
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/gateway/routing"
	"github.com/idemcoord/idemcoord/gateway/upstream"
	"github.com/idemcoord/idemcoord/internal/retry"
	"github.com/idemcoord/idemcoord/store"
)

// cancelRounds bounds how often a DELETE re-reads a record that moved on
// under it (a heartbeat or a stage of the running worker) before it gives
// up and asks the client to retry.
const cancelRounds = 4

// Cancel serves DELETE /v1/operations/{id} for actor, whom the gateway
// authenticated (r stripped of reserved headers): the owning actor
// cancels an async operation that has not entered an irreversible stage.
// Anyone else gets the 404 that GET gives them.
//
// The order makes a crash anywhere safe. The store is read first: a
// terminal record, or one whose last stage is irreversible, is refused
// (409, naming the stage) without asking anyone. Otherwise the upstream
// is asked (cancel_path), and it decides the race between its own
// irreversible step and the cancel: its refusal is answered as 409
// naming its stage, and nothing is recorded (the worker records the
// result it gets). Only its confirmation is recorded, CANCELLED, with a
// fenced, version-conditioned write that a worker's later result cannot
// overwrite. A crash between the confirmation and the write leaves a
// running record whose upstream has cancelled: the worker's own answer,
// or a takeover's resolve, carries HeaderStage "cancelled" and records
// the same CANCELLED. So a record is CANCELLED only when the upstream
// said so, and never when the operation took effect.
//
// The client's connection does not matter once the request is read: the
// cancel is carried to its recorded answer either way.
func (s *Stage) Cancel(w http.ResponseWriter, r *http.Request, actor string, start time.Time) {
	notFound := exchange.Problem{Type: "not-found", Title: "no such operation", Status: http.StatusNotFound}
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		exchange.WriteProblem(w, notFound, 0)
		return
	}
	ctx := exchange.Detach(r.Context())
	// The DELETE's store calls, its rounds' included, share one budget.
	share := retry.NewShare(retry.Default.Store)
	sctx, done := share.Call(ctx, storeCallTimeout)
	rec, err := s.store.Lookup(sctx, actor, id)
	done()
	if errors.Is(err, store.ErrNotFound) {
		exchange.WriteProblem(w, notFound, 0)
		return
	}
	if err != nil {
		s.cancelStoreDown(ctx, w, "", id, err)
		return
	}
	exchange.AdvertiseRetention(w, rec)
	ep := s.endpoint(rec.Scope.Endpoint)
	canceller := s.canceller
	cs := s.store
	if ep == nil || ep.CancelPath == "" || canceller == nil {
		s.cancelled(ctx, rec.Scope.Endpoint, "unsupported", id, "")
		exchange.WriteProblem(w, exchange.Problem{Type: "not-cancellable", Title: "operation cannot be cancelled",
			Detail: "this operation's endpoint has no cancel", Status: http.StatusConflict,
			OperationID: id.String(), OperationState: string(rec.State)}, 0)
		return
	}
	// The cancel's write is fenced like a claim: routing sends the DELETE
	// to the actor's owner region (forwarded once, or redirected), or
	// refuses it while ownership moves or the endpoint's failover policy
	// holds the shard. The rounds are the request path's (routing.Stage.Rounds).
	c := &exchange.Request{W: w, R: r, Endpoint: ep, Policy: s.policies[ep.Name], Actor: actor, Start: start, Outcomes: s.outcomes}
	cr := &cancelRun{s: s, ctx: ctx, w: w, ep: ep, id: id, rec: rec, cs: cs, canceller: canceller,
		in: upstream.Invocation{OperationID: id, Actor: actor, Endpoint: ep}}
	switch end := s.routes.Rounds(ctx, c, share, cancelRounds, cr.round); end.Ending {
	case routing.Answered:
	case routing.Routed:
		s.cancelled(ctx, ep.Name, "routed", id, "")
	case routing.NotOwner:
		s.cancelled(ctx, ep.Name, "region_unavailable", id, "")
		exchange.WriteProblem(w, exchange.Problem{Type: "region-unavailable", Title: "this region does not own the actor now",
			Detail: "nothing was cancelled; retry the DELETE", Status: http.StatusServiceUnavailable,
			OperationID: id.String()}, time.Second)
	case routing.RoundsOut, routing.FenceRefused:
		s.cancelled(ctx, ep.Name, "contention", id, "")
		exchange.WriteProblem(w, exchange.Problem{Type: "cancel-undetermined", Title: "operation is changing state",
			Detail: "the upstream confirmed the cancel and the record is being updated; retry the DELETE",
			Status: http.StatusConflict, OperationID: id.String()}, time.Second)
	default:
		s.cancelStoreDown(ctx, w, ep.Name, id, end.Err)
	}
}
