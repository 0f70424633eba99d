package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// operationPath is where an operation's status is served.
func operationPath(id uuid.UUID) string { return "/v1/operations/" + id.String() }

// accept answers an async endpoint's first run (or takeover) with 202 and
// runs the intent in the background under the claim's lease. The
// background run belongs to the gateway: Close waits for it.
//
// The request is stored before the 202 (when the store keeps requests),
// so that if this instance dies after answering, another one runs it once
// the lease expires (see recovery.go), with no new POST. A claim this
// instance will not run, because it is shutting down or could not store
// the request, is released at once: recorded RETRYABLE_FAILURE, never
// sent, so the client's retry runs it on a healthy instance instead of
// finding a live lease that nobody serves.
func (g *Gateway) accept(c *call, claim store.Claim, result string) {
	lease := claim.Lease
	ctx := context.WithoutCancel(c.R.Context())
	in := Invocation{Request: c.R.Clone(ctx), Body: c.Body,
		OperationID: lease.OperationID, Actor: c.Actor, Endpoint: c.Endpoint}
	g.closeMu.Lock()
	closing := g.closing
	if !closing {
		g.bg.Add(1)
	}
	g.closeMu.Unlock()
	if closing {
		g.release(ctx, c, lease, "instance shutting down")
		exchange.SetKeyStatus(c.W, KeyStatusRejected)
		c.RefuseWait("shutting_down", exchange.Problem{Type: "shutting-down", Title: "instance shutting down",
			Detail: "nothing was executed; retry with the same key", Status: http.StatusServiceUnavailable}, time.Second)
		return
	}
	if err := g.saveRequest(ctx, c, lease); err != nil {
		g.bg.Done()
		g.release(ctx, c, lease, "request could not be queued")
		c.StoreDown(err)
		return
	}
	go func() {
		defer g.bg.Done()
		g.runAsync(ctx, c, claim, in)
	}()
	g.metrics.request(c.R.Context(), c.Endpoint.Name, result, c.Start)
	writeAccepted(c.W, lease.OperationID, string(idempotency.Pending))
}

// runAsync runs an async intent under its claim and records the result;
// the stored request is dropped once the result is recorded.
func (g *Gateway) runAsync(ctx context.Context, c *call, claim store.Claim, in Invocation) {
	a, res, _, err := g.perform(ctx, c, claim, in)
	if a.Err != nil {
		g.log.WarnContext(ctx, "async execution failed", "operation_id", in.OperationID, "err", exchange.Redact(a.Err))
	}
	switch {
	case errors.Is(err, store.ErrLostOwnership):
		// Taken over, or cancelled (cancel.go): the record holds the
		// answer that counts, and perform said so.
	case err != nil:
		g.log.ErrorContext(ctx, "async run not recorded", "operation_id", in.OperationID, "err", err)
	}
	g.metrics.upstreamResult(ctx, c.Endpoint.Name, string(res.State))
	if err == nil {
		sctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
		if err := g.store.DropRequest(sctx, in.OperationID); err != nil {
			g.log.WarnContext(ctx, "stored async request not dropped; cleanup will", "operation_id", in.OperationID, "err", err)
		}
		cancel()
	}
}

// saveRequest stores the async request for recovery.
func (g *Gateway) saveRequest(ctx context.Context, c *call, lease *store.Lease) error {
	b, err := encodeQueued(c.R, c.Body)
	if err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
	defer cancel()
	return g.store.SaveRequest(sctx, lease, b)
}

// release gives up a claim this instance will not run: nothing was sent,
// so it is recorded RETRYABLE_FAILURE (store.Claims.Release, a
// version-conditioned write, made as soon as the store answers) and the
// next retry with the key runs it at once, instead of being told 202 for
// an operation nothing runs until the lease ends.
func (g *Gateway) release(ctx context.Context, c *call, lease *store.Lease, why string) {
	sctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
	defer cancel()
	if err := g.store.Release(sctx, lease, "never sent: "+why); err != nil && !errors.Is(err, store.ErrLostOwnership) {
		g.log.WarnContext(ctx, "claim not released yet: the store releases it once it answers", "operation_id",
			lease.OperationID, "key", c.Key, "err", err)
	}
}

// writeAccepted answers 202 with the operation's status URL.
func writeAccepted(w http.ResponseWriter, id uuid.UUID, state string) {
	h := w.Header()
	h.Set("Location", operationPath(id))
	h.Set(HeaderOperationID, id.String())
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	json.NewEncoder(w).Encode(map[string]string{"operation_id": id.String(), "state": state,
		"status_url": operationPath(id)})
}

// operationView is the JSON of GET /v1/operations/{id}.
type operationView struct {
	OperationID string        `json:"operation_id"`
	State       string        `json:"state"`
	Status      int           `json:"status,omitempty"` // the stored response's status, once finished
	Attempts    int           `json:"attempts"`
	CreatedAt   time.Time     `json:"created_at"`
	UpdatedAt   time.Time     `json:"updated_at"`
	Response    *responseView `json:"response,omitempty"`
	Error       string        `json:"error,omitempty"`
}

type responseView struct {
	Status      int             `json:"status"`
	Headers     http.Header     `json:"headers,omitempty"`
	Body        json.RawMessage `json:"body,omitempty"`
	BodyText    string          `json:"body_text,omitempty"`
	BodyOmitted bool            `json:"body_omitted,omitempty"`
}

// operation serves GET /v1/operations/{id} to the owning actor only;
// anyone else gets 404, which does not reveal that the id exists. With
// ?wait=D it holds a running operation's answer up to D for it to finish
// (see operationWait), as a retry waits on an in_progress.wait endpoint.
func (g *Gateway) operation(w http.ResponseWriter, r *http.Request) {
	p, err := g.cfg.Auth.Verify(r)
	if err != nil {
		exchange.WriteUnauthorized(w, err)
		return
	}
	notFound := exchange.Problem{Type: "not-found", Title: "no such operation", Status: http.StatusNotFound}
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		exchange.WriteProblem(w, notFound, 0)
		return
	}
	wait, err := operationWait(r)
	if err != nil {
		exchange.WriteProblem(w, exchange.Problem{Type: "invalid-parameter", Title: "invalid query parameter", Detail: exchange.Reason(err, "the wait parameter does not parse"),
			Status: http.StatusBadRequest}, 0)
		return
	}
	rec, err := g.store.Lookup(r.Context(), p.Scope(), id)
	if err == nil && wait > 0 && running(rec, g.clock.Now()) {
		var outcome waitOutcome
		rec, outcome = g.waits.wait(r.Context(), rec.Scope.Endpoint, rec, g.clock.Now().Add(wait))
		switch outcome {
		case waitGone:
			return
		case waitFinished:
			rec, err = g.store.Lookup(r.Context(), p.Scope(), id)
		}
	}
	if errors.Is(err, store.ErrNotFound) {
		exchange.WriteProblem(w, notFound, 0)
		return
	}
	if err != nil {
		exchange.WriteProblem(w, exchange.Problem{Type: "store-unavailable", Title: "idempotency store unavailable",
			Status: http.StatusServiceUnavailable}, storeRetryAfter)
		return
	}
	if rec, err = g.replay.Reveal(nil, p.Scope(), rec); err != nil {
		exchange.WriteProblem(w, exchange.Problem{Type: "secret-unavailable", Title: "the stored answer holds a secret this instance cannot open",
			Status: http.StatusInternalServerError, OperationID: rec.OperationID.String()}, 0)
		return
	}
	v := operationView{OperationID: rec.OperationID.String(), State: string(rec.State), Attempts: rec.Attempts,
		CreatedAt: rec.CreatedAt, UpdatedAt: rec.UpdatedAt, Error: rec.ErrorSummary}
	if rec.Snapshot.Status != 0 {
		rv := &responseView{Status: rec.Snapshot.Status, Headers: rec.Snapshot.Header,
			BodyOmitted: rec.Snapshot.BodyOmitted || rec.Purged || rec.Compacted}
		if json.Valid(rec.Snapshot.Body) {
			rv.Body = rec.Snapshot.Body
		} else {
			rv.BodyText = string(rec.Snapshot.Body)
		}
		v.Response = rv
		v.Status = rec.Snapshot.Status
	}
	exchange.AdvertiseRetention(w, rec)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}
