package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/gateway/routing"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/retry"
	"github.com/idemcoord/idemcoord/store"
)

// CancelVerdict is the upstream's answer to "cancel operation X".
type CancelVerdict int

// Cancel verdicts.
const (
	// CancelUndetermined: no usable answer (unreachable, timed out, or an
	// answer that is neither of the two below). Nothing is recorded; the
	// client retries the DELETE.
	CancelUndetermined CancelVerdict = iota
	// CancelConfirmed: 200 with HeaderStage "cancelled". The upstream
	// promises the operation never takes effect.
	CancelConfirmed
	// CancelRefused: 409 with HeaderStage naming the stage the operation
	// reached, from which it cannot be undone.
	CancelRefused
)

// Canceller asks the upstream to cancel an operation (*Proxy). An
// Executor that is not one (a wrapped handler) has no cancel.
type Canceller interface {
	// Cancel asks once, at the endpoint's cancel_path. It must be
	// idempotent upstream: asking again about a cancelled operation
	// confirms again.
	Cancel(ctx context.Context, in Invocation) (CancelVerdict, idempotency.Stage, error)
}

var _ Canceller = (*Proxy)(nil)

// Cancel POSTs to the endpoint's cancel_path with the operation id and
// actor, within the endpoint's upstream timeout, detached from the
// caller's context (a cancel the upstream may be carrying out is seen to
// its answer).
func (p *Proxy) Cancel(ctx context.Context, in Invocation) (CancelVerdict, idempotency.Stage, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), in.Endpoint.UpstreamTimeout)
	defer cancel()
	u := *p.upstream
	u.Path = strings.TrimSuffix(u.Path, "/") +
		strings.ReplaceAll(in.Endpoint.CancelPath, config.OperationIDParam, in.OperationID.String())
	ctx, sent := traceSend(ctx, nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), http.NoBody)
	if err != nil {
		return CancelUndetermined, idempotency.Stage{}, err
	}
	setIdentity(req.Header, in)
	a := p.do(req, sent)
	if a.Err != nil {
		return CancelUndetermined, idempotency.Stage{}, exchange.Redact(a.Err)
	}
	st, ok := stageOf(a.Header)
	switch {
	case a.Status == http.StatusOK && ok && st.Cancelled():
		return CancelConfirmed, st, nil
	case a.Status == http.StatusConflict && ok && !st.Cancelled():
		return CancelRefused, st, nil
	}
	return CancelUndetermined, st, fmt.Errorf("gateway: cancel answered %d with stage %q", a.Status, a.Header.Get(HeaderStage))
}

// cancelRounds bounds how often a DELETE re-reads a record that moved on
// under it (a heartbeat or a stage of the running worker) before it gives
// up and asks the client to retry.
const cancelRounds = 4

// cancelledResult is what every path that learns of a confirmed cancel
// records (the DELETE, the worker whose upstream call ends in the
// cancellation, a resolve): one answer, the same whichever path recorded
// it, replayed to every retry of the original request.
var cancelledResult = store.Result{State: idempotency.Cancelled, ErrorSummary: "cancelled by the owning actor",
	Snapshot: store.Snapshot{Status: http.StatusConflict,
		Header: http.Header{"Content-Type": {"application/problem+json"}},
		Body: mustJSON(exchange.Problem{Type: exchange.ProblemBase + "operation-cancelled", Title: "operation cancelled",
			Detail: "the owning actor cancelled this operation before its irreversible stage; it never took effect",
			Status: http.StatusConflict, OperationState: string(idempotency.Cancelled), NewKeySafe: true})}}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// cancelView is the 200 body of a DELETE that cancelled (or had
// cancelled) the operation.
type cancelView struct {
	OperationID string `json:"operation_id"`
	State       string `json:"state"`
	Result      string `json:"result"`
}

// cancelOperation serves DELETE /v1/operations/{id}: the owning actor
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
func (g *Gateway) cancelOperation(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	hop := r.Header.Get(HeaderForwardedFrom) // as serve does: routing refuses a second hop
	stripReserved(r.Header)
	r = routing.WithForwardedFrom(r, hop)
	p, err := g.cfg.Auth.Verify(r)
	if err != nil {
		exchange.WriteUnauthorized(w, err)
		return
	}
	actor := p.Scope()
	notFound := exchange.Problem{Type: "not-found", Title: "no such operation", Status: http.StatusNotFound}
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		exchange.WriteProblem(w, notFound, 0)
		return
	}
	ctx := context.WithoutCancel(r.Context())
	// The DELETE's store calls, its rounds' included, share one budget.
	share := retry.NewShare(retry.Default.Store)
	sctx, done := share.Call(ctx, storeCallTimeout)
	rec, err := g.store.Lookup(sctx, actor, id)
	done()
	if errors.Is(err, store.ErrNotFound) {
		exchange.WriteProblem(w, notFound, 0)
		return
	}
	if err != nil {
		g.cancelStoreDown(ctx, w, "", id, err)
		return
	}
	exchange.AdvertiseRetention(w, rec)
	ep := g.endpoint(rec.Scope.Endpoint)
	canceller := g.canceller
	cs := g.store
	if ep == nil || ep.CancelPath == "" || canceller == nil {
		g.cancelled(ctx, rec.Scope.Endpoint, "unsupported", id, "")
		exchange.WriteProblem(w, exchange.Problem{Type: "not-cancellable", Title: "operation cannot be cancelled",
			Detail: "this operation's endpoint has no cancel", Status: http.StatusConflict,
			OperationID: id.String(), OperationState: string(rec.State)}, 0)
		return
	}
	// The cancel's write is fenced like a claim: routing sends the DELETE
	// to the actor's owner region (forwarded once, or redirected), or
	// refuses it while ownership moves or the endpoint's failover policy
	// holds the shard. The rounds are the request path's (routing.Stage.Rounds).
	c := g.newCall(w, r, ep, actor, start)
	cr := &cancelRun{g: g, ctx: ctx, w: w, ep: ep, id: id, rec: rec, cs: cs, canceller: canceller,
		in: Invocation{OperationID: id, Actor: actor, Endpoint: ep}}
	switch end := g.routes.Rounds(ctx, &c.Request, share, cancelRounds, cr.round); end.Ending {
	case routing.Answered:
	case routing.Routed:
		g.cancelled(ctx, ep.Name, "routed", id, "")
	case routing.NotOwner:
		g.cancelled(ctx, ep.Name, "region_unavailable", id, "")
		exchange.WriteProblem(w, exchange.Problem{Type: "region-unavailable", Title: "this region does not own the actor now",
			Detail: "nothing was cancelled; retry the DELETE", Status: http.StatusServiceUnavailable,
			OperationID: id.String()}, time.Second)
	case routing.RoundsOut, routing.FenceRefused:
		g.cancelled(ctx, ep.Name, "contention", id, "")
		exchange.WriteProblem(w, exchange.Problem{Type: "cancel-undetermined", Title: "operation is changing state",
			Detail: "the upstream confirmed the cancel and the record is being updated; retry the DELETE",
			Status: http.StatusConflict, OperationID: id.String()}, time.Second)
	default:
		g.cancelStoreDown(ctx, w, ep.Name, id, end.Err)
	}
}

// cancelStoreDown answers 503: the record could not be read or written.
func (g *Gateway) cancelStoreDown(ctx context.Context, w http.ResponseWriter, endpoint string, id uuid.UUID, err error) {
	g.log.WarnContext(ctx, "cancel: store unavailable", "operation_id", id, "endpoint", endpoint, "err", err)
	g.cancelled(ctx, endpoint, "store_unavailable", id, "")
	exchange.WriteProblem(w, exchange.Problem{Type: "store-unavailable", Title: "idempotency store unavailable",
		Detail: "retry the DELETE", Status: http.StatusServiceUnavailable, OperationID: id.String()}, storeRetryAfter)
}

// cancelled counts and logs one cancel decision.
func (g *Gateway) cancelled(ctx context.Context, endpoint, outcome string, id uuid.UUID, stage string) {
	g.metrics.cancel(ctx, endpoint, outcome)
	g.log.InfoContext(ctx, "cancel decided", "operation_id", id, "endpoint", endpoint, "outcome", outcome, "stage", stage)
}

// writeCancelled answers 200: the operation is cancelled. replayed marks
// a DELETE that found it cancelled already.
func writeCancelled(w http.ResponseWriter, id uuid.UUID, replayed bool) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set(HeaderOperationID, id.String())
	if replayed {
		h.Set(HeaderReplayed, "true")
	}
	w.WriteHeader(http.StatusOK)
	json.NewEncoder(w).Encode(cancelView{OperationID: id.String(), State: string(idempotency.Cancelled), Result: "cancelled"})
}

// writeNotCancellable answers 409 naming the stage (or the terminal
// state) that prevents the cancel.
func writeNotCancellable(w http.ResponseWriter, id uuid.UUID, state idempotency.State, stage string) {
	exchange.WriteProblem(w, exchange.Problem{Type: "not-cancellable", Title: "operation cannot be cancelled",
		Detail: fmt.Sprintf("the operation has reached %q, from which it cannot be undone", stage),
		Status: http.StatusConflict, OperationID: id.String(), OperationState: string(state), Stage: stage}, 0)
}
