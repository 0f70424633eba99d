package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/crdb"
	"github.com/idemcoord/idemcoord/idempotency"
)

// operationPath is where an operation's status is served.
func operationPath(id uuid.UUID) string { return "/v1/operations/" + id.String() }

// accept answers an async endpoint's first run (or takeover) with 202 and
// runs the intent in the background under the claim's lease. The
// background run belongs to the gateway: Close waits for it.
func (g *Gateway) accept(c *call, claim crdb.Claim, result string) {
	lease := claim.Lease
	in := Invocation{Request: c.r.Clone(context.WithoutCancel(c.r.Context())), Body: c.body,
		OperationID: lease.OperationID, Actor: c.actor, Endpoint: c.ep}
	g.closeMu.Lock()
	closing := g.closing
	if !closing {
		g.bg.Add(1)
	}
	g.closeMu.Unlock()
	if closing {
		// Shutting down: leave the claim to expire and a retry to take it
		// over in another instance.
		g.refuseWait(c, "store_unavailable", problem{Type: "shutting-down", Title: "instance shutting down",
			Detail: "nothing was executed; retry with the same key", Status: http.StatusServiceUnavailable}, time.Second)
		return
	}
	go func() {
		defer g.bg.Done()
		ctx := context.WithoutCancel(in.Request.Context())
		a, res, _, err := g.perform(ctx, c, claim, in)
		if a.Err != nil {
			g.log.WarnContext(ctx, "async execution failed", "operation_id", in.OperationID, "err", redact(a.Err))
		}
		if err != nil {
			g.log.ErrorContext(ctx, "async run not recorded", "operation_id", in.OperationID, "err", err)
		}
		g.metrics.upstreamResult(ctx, c.ep.Name, string(res.State))
	}()
	g.metrics.request(c.r.Context(), c.ep.Name, result, c.start)
	writeAccepted(c.w, lease.OperationID, string(idempotency.Pending))
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
// anyone else gets 404, which does not reveal that the id exists.
func (g *Gateway) operation(w http.ResponseWriter, r *http.Request) {
	p, err := g.cfg.Auth.Verify(r)
	if err != nil {
		writeProblem(w, problem{Type: "unauthorized", Title: "missing or invalid bearer token",
			Status: http.StatusUnauthorized, NewKeySafe: true}, 0)
		return
	}
	notFound := problem{Type: "not-found", Title: "no such operation", Status: http.StatusNotFound}
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		writeProblem(w, notFound, 0)
		return
	}
	rec, err := g.cfg.Store.Lookup(r.Context(), p.Scope(), id)
	if errors.Is(err, crdb.ErrNotFound) {
		writeProblem(w, notFound, 0)
		return
	}
	if err != nil {
		writeProblem(w, problem{Type: "store-unavailable", Title: "idempotency store unavailable",
			Status: http.StatusServiceUnavailable}, storeRetryAfter)
		return
	}
	v := operationView{OperationID: rec.OperationID.String(), State: string(rec.State), Attempts: rec.Attempts,
		CreatedAt: rec.CreatedAt, UpdatedAt: rec.UpdatedAt, Error: rec.ErrorSummary}
	if rec.Snapshot.Status != 0 {
		rv := &responseView{Status: rec.Snapshot.Status, Headers: rec.Snapshot.Header,
			BodyOmitted: rec.Snapshot.BodyOmitted || rec.Purged}
		if json.Valid(rec.Snapshot.Body) {
			rv.Body = rec.Snapshot.Body
		} else {
			rv.BodyText = string(rec.Snapshot.Body)
		}
		v.Response = rv
		v.Status = rec.Snapshot.Status
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}
