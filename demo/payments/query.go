package payments

import (
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/demo/internal/problem"
)

// listLimit caps GET /v1/payments: a demo listing, not a paginated API.
const listLimit = 100

// ListItem is one entry of GET /v1/payments.
type ListItem struct {
	Receipt
	// CreatedAt is when the payment was accepted.
	CreatedAt time.Time `json:"created_at"`
}

// list answers the calling actor's payments, newest first (UUIDv7 ids
// break created_at ties in creation order).
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	actor, ok := actorOf(w, r)
	if !ok {
		return
	}
	rows, err := s.pool.Query(r.Context(), `SELECT `+columns+` FROM payments WHERE actor = $1
		ORDER BY created_at DESC, payment_id DESC LIMIT $2`, actor, listLimit)
	if err != nil {
		s.log.Error("payments: list", "err", err)
		storeUnavailable(w, uuid.Nil)
		return
	}
	defer rows.Close()
	items := []ListItem{}
	for rows.Next() {
		p, err := scan(rows)
		if err != nil {
			s.log.Error("payments: list", "err", err)
			storeUnavailable(w, uuid.Nil)
			return
		}
		items = append(items, ListItem{Receipt: receipt(p), CreatedAt: p.CreatedAt})
	}
	if err := rows.Err(); err != nil {
		s.log.Error("payments: list", "err", err)
		storeUnavailable(w, uuid.Nil)
		return
	}
	problem.JSON(w, http.StatusOK, map[string][]ListItem{"payments": items})
}

// get answers one of the calling actor's payments; another actor's payment
// is 404, indistinguishable from a missing one.
func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	actor, ok := actorOf(w, r)
	if !ok {
		return
	}
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		notFound(w)
		return
	}
	p, err := scan(s.pool.QueryRow(r.Context(), `SELECT `+columns+` FROM payments
		WHERE payment_id = $1 AND actor = $2`, id, actor))
	switch {
	case errors.Is(err, ErrNotFound):
		notFound(w)
	case err != nil:
		s.log.Error("payments: get", "payment_id", id, "err", err)
		storeUnavailable(w, uuid.Nil)
	default:
		problem.JSON(w, http.StatusOK, receipt(p))
	}
}

// resolve is the gateway's resolve URL for an operation whose outcome is
// unknown:
//
//	cancelled before its capture       200 Resolution of the cancellation (409,
//	                                   X-Idempotency-Stage: cancelled)
//	no payment row                     404: it never ran, a re-run is safe
//	succeeded                          200 Resolution
//	pending, the bank has a charge     settle to succeeded, 200 Resolution
//	pending, the bank has none         409: the original may still be in flight
//	failed, the bank has a charge      settle to succeeded, 200 Resolution
//	failed, the bank has none          404: a re-run retries the charge
//	the bank or the store cannot tell  503
//
// A 404 for "no row" is safe because the row is inserted before the bank is
// called and operation_id is unique: a late original cannot charge after
// the re-run. Failed rows were marked only when the bank's answer or a
// refused connection proved nothing was recorded.
func (s *Server) resolve(w http.ResponseWriter, r *http.Request) {
	op, err := uuid.Parse(r.PathValue("operation_id"))
	if err != nil {
		problem.Invalid(w, "operation_id", "operation_id must be a UUID")
		return
	}
	actor := r.Header.Get(HeaderActor)
	if actor == "" {
		problem.Invalid(w, HeaderActor, "the resolve endpoint answers the coordinating gateway, which names the actor")
		return
	}
	if row, err := s.readStage(r.Context(), op); err == nil && row.actor == actor && row.stage == StageCancelled {
		problem.JSON(w, http.StatusOK, cancelledResolution(op))
		return
	} else if err != nil && !isNoRows(err) {
		s.log.Error("payments: resolve", "operation_id", op, "err", err)
		storeUnavailable(w, op)
		return
	}
	p, err := find(r.Context(), s.pool, op)
	switch {
	case errors.Is(err, ErrNotFound):
		notFound(w)
		return
	case err != nil:
		s.log.Error("payments: resolve", "operation_id", op, "err", err)
		storeUnavailable(w, op)
		return
	case p.Actor != actor:
		// Not 404: to the gateway that means "never ran". Another actor's
		// operation is simply not this caller's to see.
		problem.Write(w, problem.Details{Type: "forbidden", Title: "operation belongs to another actor",
			Status: http.StatusForbidden, OperationID: op.String()})
		return
	}
	charged := false
	if p.Status != StatusSucceeded {
		if p, charged, err = s.settle(r.Context(), p); err != nil {
			s.log.Warn("payments: resolve cannot tell", "operation_id", op, "err", err)
			problem.Write(w, problem.Details{Type: "outcome-unknown", Title: "outcome unknown",
				Status: http.StatusServiceUnavailable, OperationID: op.String(), RetryAfter: 1,
				Detail: "the bank could not be asked whether this operation was charged"})
			return
		}
	}
	switch {
	case p.Status == StatusSucceeded:
		problem.JSON(w, http.StatusOK, resolution(p))
	case p.Status == StatusFailed && !charged:
		notFound(w)
	default:
		inProgress(w, op)
	}
}

func notFound(w http.ResponseWriter) {
	problem.Write(w, problem.Details{Type: "not-found", Title: "not found", Status: http.StatusNotFound})
}
