package payments

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/demo/internal/problem"
)

// HeaderStage is how the service reports an operation's stage to the
// gateway (gateway.HeaderStage): "reserved;reversible" while the funds are
// only reserved, "captured" once the capture (the irreversible step) is
// decided, "cancelled" once a cancel won.
const HeaderStage = "X-Idempotency-Stage"

// Operation stages (payment_stages.stage).
const (
	// StageReserved: the operation is known and its funds are held; nothing
	// is charged yet, and a cancel still stops it. Reversible.
	StageReserved = "reserved"
	// StageCaptured: the capture is decided; the bank is (or is about to
	// be) charged. Irreversible: a cancel is refused from here on.
	StageCaptured = "captured"
	// StageCancelled: a cancel won the row before the capture; the
	// operation never charges.
	StageCancelled = "cancelled"
)

// DefaultHold is how long POST /v1/held-payments keeps a payment reserved
// before it captures: long enough for a person at a terminal to cancel it
// in the dev cluster, well inside the gateway's default upstream timeout.
const DefaultHold = 3 * time.Second

// stagesSchema is portable SQL. One row per operation: the capture
// (reserved -> captured) and the cancel (reserved -> cancelled, or a new
// row 'cancelled' for an operation not seen yet) are conditional writes
// on it, so exactly one of them wins.
const stagesSchema = `
CREATE TABLE IF NOT EXISTS payment_stages (
    operation_id UUID        NOT NULL PRIMARY KEY,
    actor        TEXT        NOT NULL,
    stage        TEXT        NOT NULL CHECK (stage IN ('reserved', 'captured', 'cancelled')),
    updated_at   TIMESTAMPTZ NOT NULL
);
`

// stageRow is one row of payment_stages.
type stageRow struct {
	actor, stage string
}

// readStage reads op's stage row; pgx.ErrNoRows when there is none.
func (s *Server) readStage(ctx context.Context, op uuid.UUID) (stageRow, error) {
	var r stageRow
	err := s.pool.QueryRow(ctx, `SELECT actor, stage FROM payment_stages WHERE operation_id = $1`, op).Scan(&r.actor, &r.stage)
	return r, err
}

// gate runs an execution through the reversible stage: it reserves the
// operation (a stage row, unless one exists), holds it for hold on the
// service's clock, then captures it (reserved -> captured, conditional):
// the irreversible step, after which the payment is inserted and charged
// as before. It reports the stages it passes in informational answers
// (102) when report is set. It answers and returns false when the
// execution must stop: a cancel won (the cancellation), another actor's
// operation (422), or the store failed.
func (s *Server) gate(ctx context.Context, w http.ResponseWriter, op uuid.UUID, actor string, hold time.Duration, report bool) bool {
	now := s.now().UTC()
	_, err := s.pool.Exec(ctx, `INSERT INTO payment_stages (operation_id, actor, stage, updated_at)
		VALUES ($1, $2, 'reserved', $3) ON CONFLICT (operation_id) DO NOTHING`, op, actor, now)
	var row stageRow
	if err == nil {
		row, err = s.readStage(ctx, op)
	}
	if err != nil {
		s.log.Error("payments: reserve", "operation_id", op, "err", err)
		storeUnavailable(w, op)
		return false
	}
	if row.actor != actor {
		s.log.Warn("payments: operation id reused by another actor", "operation_id", op)
		problem.Write(w, problem.Details{Type: "operation-mismatch", Title: "operation id reused",
			Status: http.StatusUnprocessableEntity, OperationID: op.String(),
			Detail: "this operation id already belongs to a different payment request"})
		return false
	}
	switch row.stage {
	case StageCancelled:
		writeCancelled(w, op)
		return false
	case StageCaptured:
		return true
	}
	if report {
		interim(w, StageReserved+";reversible")
	}
	if hold > 0 {
		// A cancel that wins the row in this process ends the hold at
		// once (see cancel); one won elsewhere is found at the capture.
		hctx, wake := context.WithCancel(ctx)
		h := &heldExecution{wake: wake}
		s.holds.Store(op, h)
		clock.Sleep(hctx, s.clock, hold)
		s.holds.CompareAndDelete(op, h)
		wake()
		if ctx.Err() != nil {
			storeUnavailable(w, op)
			return false
		}
	}
	tag, err := s.pool.Exec(ctx, `UPDATE payment_stages SET stage = 'captured', updated_at = $2
		WHERE operation_id = $1 AND stage = 'reserved'`, op, s.now().UTC())
	if err == nil && tag.RowsAffected() == 0 {
		row, err = s.readStage(ctx, op) // lost to a cancel, or to another execution's capture
	}
	switch {
	case err != nil:
		s.log.Error("payments: capture", "operation_id", op, "err", err)
		storeUnavailable(w, op)
		return false
	case tag.RowsAffected() == 0 && row.stage == StageCancelled:
		s.log.Info("payments: cancelled before capture", "operation_id", op)
		writeCancelled(w, op)
		return false
	}
	if report {
		interim(w, StageCaptured)
		w.Header().Set(HeaderStage, StageCaptured) // on the final answer too
	}
	return true
}

// heldExecution is an execution holding its operation in this process.
type heldExecution struct {
	wake context.CancelFunc // ends the hold
}

// interim sends an informational 102 answer reporting stage; the final
// answer follows on the same request.
func interim(w http.ResponseWriter, stage string) {
	w.Header().Set(HeaderStage, stage)
	w.WriteHeader(http.StatusProcessing)
	w.Header().Del(HeaderStage)
}

// cancel handles POST /internal/operations/{operation_id}/cancel, the
// gateway's cancel URL. It wins the operation's stage row for the cancel
// if it can, in one conditional write: a new row 'cancelled' for an
// operation this service has not seen (a later execution of it then
// stops at the gate), or reserved -> cancelled. Answers:
//
//	cancelled now or before          200, X-Idempotency-Stage: cancelled
//	captured                         409, X-Idempotency-Stage: captured
//	another actor's operation        403
//	the store failed                 503
//
// Asking again is safe: a cancelled operation answers 200 again.
func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	op, err := uuid.Parse(r.PathValue("operation_id"))
	if err != nil {
		problem.Invalid(w, "operation_id", "operation_id must be a UUID")
		return
	}
	actor := r.Header.Get(HeaderActor)
	if actor == "" {
		problem.Invalid(w, HeaderActor, "the cancel endpoint answers the coordinating gateway, which names the actor")
		return
	}
	row, err := s.cancelStage(r.Context(), op, actor)
	switch {
	case err != nil:
		s.log.Error("payments: cancel", "operation_id", op, "err", err)
		storeUnavailable(w, op)
	case row.actor != actor:
		problem.Write(w, problem.Details{Type: "forbidden", Title: "operation belongs to another actor",
			Status: http.StatusForbidden, OperationID: op.String()})
	case row.stage == StageCancelled:
		s.log.Info("payments: cancelled", "operation_id", op)
		w.Header().Set(HeaderStage, StageCancelled)
		problem.JSON(w, http.StatusOK, map[string]string{"operation_id": op.String(), "stage": StageCancelled})
	default:
		s.log.Info("payments: cancel refused", "operation_id", op, "stage", row.stage)
		w.Header().Set(HeaderStage, row.stage)
		problem.Write(w, problem.Details{Type: "not-cancellable", Title: "payment already captured",
			Status: http.StatusConflict, OperationID: op.String(),
			Detail: fmt.Sprintf("the payment reached %q and can no longer be cancelled", row.stage)})
	}
}

// cancelStage cancels op for actor if its row allows it and returns the
// row as it then is.
func (s *Server) cancelStage(ctx context.Context, op uuid.UUID, actor string) (stageRow, error) {
	now := s.now().UTC()
	tag, err := s.pool.Exec(ctx, `INSERT INTO payment_stages (operation_id, actor, stage, updated_at)
		VALUES ($1, $2, 'cancelled', $3) ON CONFLICT (operation_id) DO NOTHING`, op, actor, now)
	if err != nil {
		return stageRow{}, err
	}
	if tag.RowsAffected() == 1 {
		return stageRow{actor: actor, stage: StageCancelled}, nil
	}
	tag, err = s.pool.Exec(ctx, `UPDATE payment_stages SET stage = 'cancelled', updated_at = $3
		WHERE operation_id = $1 AND actor = $2 AND stage = 'reserved'`, op, actor, now)
	if err != nil {
		return stageRow{}, err
	}
	if h, ok := s.holds.Load(op); ok && tag.RowsAffected() == 1 {
		h.(*heldExecution).wake() // the held execution stops now
	}
	return s.readStage(ctx, op)
}

// writeCancelled answers an execution of a cancelled operation: 409,
// X-Idempotency-Stage: cancelled. Nothing was or will be charged.
func writeCancelled(w http.ResponseWriter, op uuid.UUID) {
	w.Header().Set(HeaderStage, StageCancelled)
	problem.Write(w, cancelledProblem(op))
}

func cancelledProblem(op uuid.UUID) problem.Details {
	return problem.Details{Type: "payment-cancelled", Title: "payment cancelled",
		Status: http.StatusConflict, OperationID: op.String(),
		Detail: "the payment was cancelled before its capture; nothing was charged"}
}

// cancelledResolution is the resolve answer for a cancelled operation: the
// answer its execution gives, for the gateway to record.
func cancelledResolution(op uuid.UUID) map[string]any {
	d := cancelledProblem(op)
	d.Type = problem.TypeBase + d.Type
	return map[string]any{"status": http.StatusConflict, "body": d, "headers": map[string][]string{
		"Content-Type": {"application/problem+json"}, HeaderStage: {StageCancelled}}}
}

// isNoRows reports pgx's "no row".
func isNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }
