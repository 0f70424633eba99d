package payments

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/internal/retry"
)

// Releasing a payment this process knows it charged nothing for. An
// execution that ends with its row still 'pending' although no charge of
// it can land (the bank answered "not recorded" or was never called, and
// the database failed before the row could be marked 'failed') would
// otherwise leave the row pending for good: every later execution asks
// the bank, finds no charge and answers 409, because a pending row may
// belong to a bank call still in flight. During a database failover that
// is what happened to intents in the store drills: their retries got 409
// until the drill ended.
//
// So the execution hands the row to a background release that marks it
// 'failed' as soon as the database answers: an update conditioned on the
// row still being exactly that attempt (its payment id, 'pending', its
// attempt count), so a row another execution moved on (settled, or
// claimed back to pending for a new attempt, which counts an attempt) is
// left alone. A failed row is charged again only after the bank's word
// that nothing was charged (resume), so a "not recorded" answer whose
// commit the bank lost still charges once.

// Bounds of the background release.
const (
	releaseFirstWait = 50 * time.Millisecond
	releaseMaxWait   = 2 * time.Second
	// releaseBudget is how long a release keeps trying while the database
	// does not answer; past it the row stays pending for an operator.
	releaseBudget = 10 * time.Minute
)

// releaseLater marks p failed in the background once the database
// answers, if it is still pending at p.Attempts. why is logged.
func (s *Server) releaseLater(p Payment, why error) {
	s.log.Warn("payments: nothing charged but the row stays pending; releasing it once the database answers",
		"operation_id", p.OperationID, "attempt", p.Attempts, "err", why)
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), releaseBudget)
		defer cancel()
		stop := context.AfterFunc(s.closing, cancel)
		defer stop()
		b := retry.Backoff{Min: releaseFirstWait, Max: releaseMaxWait, Clock: s.clock}
		for {
			released, err := s.release(ctx, p.ID, p.Attempts)
			switch {
			case err == nil && released:
				s.log.Info("payments: released as failed (nothing charged)", "operation_id", p.OperationID)
				return
			case err == nil:
				s.log.Info("payments: release left: the row moved on", "operation_id", p.OperationID)
				return
			}
			if b.Wait(ctx) != nil {
				s.log.Error("payments: release given up; the row stays pending", "operation_id", p.OperationID,
					"err", err)
				return
			}
		}
	}()
}

// release marks payment id failed if it is still pending at attempts.
func (s *Server) release(ctx context.Context, id uuid.UUID, attempts int) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE payments SET status = 'failed', updated_at = $3
		WHERE payment_id = $1 AND status = 'pending' AND attempts = $2`,
		id, attempts, s.now().UTC().Truncate(time.Microsecond))
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

// Close stops the background releases and waits for them. The server
// must not serve requests after Close.
func (s *Server) Close() {
	s.stopClosing()
	s.bg.Wait()
}
