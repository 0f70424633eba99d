package async

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

// Accept answers an async endpoint's first run (or takeover) with 202 and
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
func (s *Stage) Accept(c *exchange.Request, claim store.Claim, result string) {
	lease := claim.Lease
	ctx := exchange.Detach(c.R.Context())
	if !s.work.enter() {
		s.release(ctx, c, lease, "instance shutting down")
		exchange.SetKeyStatus(c.W, exchange.KeyStatusRejected)
		c.RefuseWait("shutting_down", exchange.Problem{Type: "shutting-down", Title: "instance shutting down",
			Detail: "nothing was executed; retry with the same key", Status: http.StatusServiceUnavailable}, time.Second)
		return
	}
	if err := s.saveRequest(ctx, c, lease); err != nil {
		s.work.exit()
		s.release(ctx, c, lease, "request could not be queued")
		c.StoreDown(err)
		return
	}
	run := *c
	run.R = c.R.Clone(ctx)
	go func() {
		defer s.work.exit()
		s.runAsync(ctx, &run, claim)
	}()
	c.Outcomes.Count(c.R.Context(), c.Endpoint.Name, result, c.Start)
	WriteAccepted(c.W, lease.OperationID, string(idempotency.Pending))
}

// runAsync runs an async intent under its claim (upstream.RunQueued);
// the stored request is dropped once the result is recorded.
func (s *Stage) runAsync(ctx context.Context, c *exchange.Request, claim store.Claim) {
	if !s.runner.RunQueued(ctx, c, claim) {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
	if err := s.store.DropRequest(sctx, claim.Lease.OperationID); err != nil {
		s.log.WarnContext(ctx, "stored async request not dropped; cleanup will", "operation_id", claim.Lease.OperationID, "err", err)
	}
	cancel()
}

// saveRequest stores the async request for recovery.
func (s *Stage) saveRequest(ctx context.Context, c *exchange.Request, lease *store.Lease) error {
	b, err := encodeQueued(c.R, c.Body)
	if err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
	defer cancel()
	return s.store.SaveRequest(sctx, lease, b)
}

// release gives up a claim this instance will not run: nothing was sent,
// so it is recorded RETRYABLE_FAILURE (store.Claims.Release, a
// version-conditioned write, made as soon as the store answers) and the
// next retry with the key runs it at once, instead of being told 202 for
// an operation nothing runs until the lease ends.
func (s *Stage) release(ctx context.Context, c *exchange.Request, lease *store.Lease, why string) {
	sctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
	defer cancel()
	if err := s.store.Release(sctx, lease, "never sent: "+why); err != nil && !errors.Is(err, store.ErrLostOwnership) {
		s.log.WarnContext(ctx, "claim not released yet: the store releases it once it answers", "operation_id",
			lease.OperationID, "key", c.Key, "err", err)
	}
}

// WriteAccepted answers 202 with the operation's status URL.
func WriteAccepted(w http.ResponseWriter, id uuid.UUID, state string) {
	h := w.Header()
	h.Set("Location", operationPath(id))
	h.Set(exchange.HeaderOperationID, id.String())
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	json.NewEncoder(w).Encode(map[string]string{"operation_id": id.String(), "state": state,
		"status_url": operationPath(id)})
}
