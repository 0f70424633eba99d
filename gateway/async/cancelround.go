package async

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/gateway/routing"
	"github.com/idemcoord/idemcoord/gateway/upstream"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// cancelRun is one DELETE's state across its rounds.
type cancelRun struct {
	s         *Stage
	ctx       context.Context
	w         http.ResponseWriter
	ep        *config.Endpoint
	id        uuid.UUID
	in        upstream.Invocation
	rec       store.Record // as last read
	cs        store.Cancels
	canceller upstream.Canceller
	confirmed bool // the upstream confirmed the cancel
}

// round decides on the record as last read: answer from it, ask the
// upstream (once), record the confirmed cancel, or read again.
func (cr *cancelRun) round(r routing.Round) routing.Step {
	s, ctx, w, ep, id, rec := cr.s, cr.ctx, cr.w, cr.ep, cr.id, cr.rec
	if rec.State == idempotency.Cancelled && cr.confirmed {
		// This DELETE's cancel; the worker, handed the upstream's
		// cancellation, recorded it first.
		s.cancelled(ctx, ep.Name, "cancelled", id, "")
		writeCancelled(w, id, false)
		return routing.Done
	}
	if rec.State == idempotency.Cancelled {
		s.cancelled(ctx, ep.Name, "already_cancelled", id, "")
		writeCancelled(w, id, true)
		return routing.Done
	}
	if ok, stage := store.Cancellable(rec); !ok {
		s.cancelled(ctx, ep.Name, "irreversible", id, stage)
		writeNotCancellable(w, id, rec.State, stage)
		return routing.Done
	}
	if !cr.confirmed {
		v, st, err := cr.canceller.Cancel(ctx, cr.in)
		switch v {
		case upstream.CancelRefused:
			s.cancelled(ctx, ep.Name, "refused_upstream", id, st.Name)
			writeNotCancellable(w, id, rec.State, st.Name)
			return routing.Done
		case upstream.CancelUndetermined:
			s.log.WarnContext(ctx, "cancel: upstream gave no verdict", "operation_id", id, "endpoint", ep.Name, "err", err)
			s.cancelled(ctx, ep.Name, "undetermined", id, "")
			exchange.WriteProblem(w, exchange.Problem{Type: "cancel-undetermined", Title: "the upstream did not confirm or refuse the cancel",
				Detail: "the operation may or may not be cancelled; retry the DELETE", Status: http.StatusBadGateway,
				OperationID: id.String(), OperationState: string(rec.State)}, time.Second)
			return routing.Done
		}
		cr.confirmed = true
	}
	sctx, done := r.Store(ctx)
	err := cr.cs.Cancel(sctx, rec, r.Token, upstream.Cancelled)
	done()
	var staleEpoch *fencing.StaleEpochError
	next := routing.Again
	switch {
	case err == nil:
		s.cancelled(ctx, ep.Name, "cancelled", id, "")
		writeCancelled(w, id, false)
		return routing.Done
	case errors.As(err, &staleEpoch):
		next = routing.Stale(err)
	case !errors.Is(err, store.ErrLostOwnership) && !errors.Is(err, store.ErrNotCancellable) &&
		!errors.As(err, new(*store.AmbiguousCommitError)):
		s.cancelStoreDown(ctx, w, ep.Name, id, err)
		return routing.Done
	}
	// Moved on (a heartbeat, a stage, the worker's own CANCELLED), or the
	// commit's outcome was lost: read again and decide again.
	sctx, done = r.Store(ctx)
	cr.rec, err = s.store.Lookup(sctx, cr.in.Actor, id)
	done()
	if err != nil {
		s.cancelStoreDown(ctx, w, ep.Name, id, err)
		return routing.Done
	}
	return next
}

// cancelView is the 200 body of a DELETE that cancelled (or had
// cancelled) the operation.
type cancelView struct {
	OperationID string `json:"operation_id"`
	State       string `json:"state"`
	Result      string `json:"result"`
}

// cancelStoreDown answers 503: the record could not be read or written.
func (s *Stage) cancelStoreDown(ctx context.Context, w http.ResponseWriter, endpoint string, id uuid.UUID, err error) {
	s.log.WarnContext(ctx, "cancel: store unavailable", "operation_id", id, "endpoint", endpoint, "err", err)
	s.cancelled(ctx, endpoint, "store_unavailable", id, "")
	exchange.WriteProblem(w, exchange.Problem{Type: "store-unavailable", Title: "idempotency store unavailable",
		Detail: "retry the DELETE", Status: http.StatusServiceUnavailable, OperationID: id.String()}, exchange.StoreRetryAfter)
}

// cancelled counts and logs one cancel decision.
func (s *Stage) cancelled(ctx context.Context, endpoint, outcome string, id uuid.UUID, stage string) {
	s.cancels(ctx, endpoint, outcome)
	s.log.InfoContext(ctx, "cancel decided", "operation_id", id, "endpoint", endpoint, "outcome", outcome, "stage", stage)
}

// writeCancelled answers 200: the operation is cancelled. replayed marks
// a DELETE that found it cancelled already.
func writeCancelled(w http.ResponseWriter, id uuid.UUID, replayed bool) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set(exchange.HeaderOperationID, id.String())
	if replayed {
		h.Set(exchange.HeaderReplayed, "true")
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
