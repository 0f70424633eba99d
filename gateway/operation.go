package gateway

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/store"
)

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
