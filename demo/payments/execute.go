package payments

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/demo/internal/problem"
)

// dbBudget is the time left for database statements around the bank calls
// of one execution, on top of the bank timeouts.
const dbBudget = 10 * time.Second

// execute charges the bank for p, which this execution owns in status
// 'pending', and answers with the outcome.
func (s *Server) execute(ctx context.Context, w http.ResponseWriter, p Payment) {
	out, chargeID, err := s.bank.charge(ctx, p)
	switch out {
	case charged:
		s.finish(ctx, w, p, StatusPending, chargeID)
	case refused, notSent:
		s.log.Warn("payments: bank refused the charge", "operation_id", p.OperationID, "err", err)
		won, err := s.transition(ctx, p.ID, StatusPending, StatusFailed, uuid.NullUUID{})
		if err != nil || won {
			if err != nil {
				s.log.Error("payments: mark failed", "operation_id", p.OperationID, "err", err)
				s.releaseLater(p, err) // nothing charged: the row must not stay pending
			}
			bankFailed(w, p.OperationID)
			return
		}
		s.reread(ctx, w, p.OperationID)
	default:
		s.log.Warn("payments: bank outcome unknown", "operation_id", p.OperationID, "err", err)
		problem.Write(w, problem.Details{Type: "bank-timeout", Title: "bank outcome unknown",
			Status: http.StatusGatewayTimeout, OperationID: p.OperationID.String(),
			Detail: "the bank did not answer; the payment stays pending until the bank is asked"})
	}
}

// finish marks p (in status from) succeeded after the bank charged it and
// answers 201. Losing the conditional update means another execution moved
// the row first: its current state is answered instead.
func (s *Server) finish(ctx context.Context, w http.ResponseWriter, p Payment, from string, chargeID uuid.NullUUID) {
	won, err := s.transition(ctx, p.ID, from, StatusSucceeded, chargeID)
	switch {
	case err != nil:
		// Charged, but not recorded as such: the row stays as it was, and
		// the next execution or the resolve endpoint asks the bank.
		s.log.Error("payments: mark succeeded", "operation_id", p.OperationID, "err", err)
		storeUnavailable(w, p.OperationID)
	case won:
		s.log.Info("payments: succeeded", "operation_id", p.OperationID, "payment_id", p.ID)
		p.Status = StatusSucceeded
		writeCreated(w, p)
	default:
		s.reread(ctx, w, p.OperationID)
	}
}

// resume answers a second execution of an operation whose row exists.
// retry allows a failed payment to be charged again; it is false after a
// lost race, so an execution never loops.
func (s *Server) resume(ctx context.Context, w http.ResponseWriter, p Payment, retry bool) {
	switch p.Status {
	case StatusSucceeded:
		writeCreated(w, p)
	case StatusPending:
		settled, _, err := s.settle(ctx, p)
		if err != nil {
			s.log.Warn("payments: cannot ask the bank", "operation_id", p.OperationID, "err", err)
		}
		if err == nil && settled.Status == StatusSucceeded {
			writeCreated(w, settled)
			return
		}
		inProgress(w, p.OperationID)
	case StatusFailed:
		if !retry {
			bankFailed(w, p.OperationID)
			return
		}
		won, err := s.transition(ctx, p.ID, StatusFailed, StatusPending, uuid.NullUUID{})
		if err != nil {
			s.log.Error("payments: claim failed payment", "operation_id", p.OperationID, "err", err)
			storeUnavailable(w, p.OperationID)
			return
		}
		if !won {
			s.reread(ctx, w, p.OperationID)
			return
		}
		// This execution owns the retry. The bank's word that nothing was
		// charged comes first: an earlier attempt's charge may have landed.
		p.Status, p.Attempts = StatusPending, p.Attempts+1
		ok, chargeID, err := s.bank.charged(ctx, p.OperationID)
		switch {
		case err != nil:
			s.log.Warn("payments: cannot ask the bank", "operation_id", p.OperationID, "err", err)
			if _, err := s.transition(ctx, p.ID, StatusPending, StatusFailed, uuid.NullUUID{}); err != nil {
				s.log.Error("payments: mark failed", "operation_id", p.OperationID, "err", err)
				s.releaseLater(p, err) // the bank was never called for this attempt
			}
			bankFailed(w, p.OperationID)
		case ok:
			s.finish(ctx, w, p, StatusPending, chargeID)
		default:
			s.log.Info("payments: retrying failed payment", "operation_id", p.OperationID, "attempt", p.Attempts)
			s.execute(ctx, w, p)
		}
	default:
		storeUnavailable(w, p.OperationID)
	}
}

// reread answers from the row's current state after a lost race.
func (s *Server) reread(ctx context.Context, w http.ResponseWriter, op uuid.UUID) {
	p, err := find(ctx, s.pool, op)
	if err != nil {
		s.log.Error("payments: reread", "operation_id", op, "err", err)
		storeUnavailable(w, op)
		return
	}
	s.resume(ctx, w, p, false)
}

// settle asks the bank whether p's operation was charged and, if so, moves
// the row from pending or failed to succeeded. It returns the row as it now
// is and what the bank said. On error (the bank could not tell, or the row
// could not be updated or read) the row is returned as last read.
func (s *Server) settle(ctx context.Context, p Payment) (Payment, bool, error) {
	ok, chargeID, err := s.bank.charged(ctx, p.OperationID)
	if err != nil || !ok {
		return p, false, err
	}
	for range 3 {
		if p.Status == StatusSucceeded {
			return p, true, nil
		}
		won, err := s.transition(ctx, p.ID, p.Status, StatusSucceeded, chargeID)
		if err != nil {
			return p, true, err
		}
		if won {
			s.log.Info("payments: settled by the bank's record", "operation_id", p.OperationID, "from", p.Status)
			p.Status = StatusSucceeded
			return p, true, nil
		}
		now, err := find(ctx, s.pool, p.OperationID)
		if err != nil {
			return p, true, err
		}
		p = now
	}
	return p, true, fmt.Errorf("payments: payment %s keeps changing status", p.ID)
}

// transition moves a payment from one status to another, only if it is
// still in from, and reports whether this call did it. Moving back to
// pending counts a new attempt.
func (s *Server) transition(ctx context.Context, id uuid.UUID, from, to string, chargeID uuid.NullUUID) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE payments
		SET status = $3, charge_id = COALESCE($4, charge_id), updated_at = $5,
		    attempts = attempts + CASE WHEN $3 = 'pending' THEN 1 ELSE 0 END
		WHERE payment_id = $1 AND status = $2`,
		id, from, to, chargeID, s.now().UTC().Truncate(time.Microsecond))
	if err != nil {
		return false, fmt.Errorf("payments: %s -> %s: %w", from, to, err)
	}
	return tag.RowsAffected() == 1, nil
}
