package gateway

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/idemcoord/idemcoord/crdb"
	"github.com/idemcoord/idemcoord/idempotency"
)

// stageSending is the recovery point recorded before an upstream call on
// endpoints without a resolve path: a takeover that finds it knows the
// call may have been sent; one that does not knows it was not.
const stageSending = "sending"

// run executes the intent under the claim's lease, records the result and
// answers the client. again asks the caller to claim once more: the
// operation was taken over meanwhile, and its record now holds the answer
// that counts (or says it is still in progress).
func (g *Gateway) run(ctx context.Context, c *call, claim crdb.Claim, result string) (again bool) {
	in := Invocation{Request: c.r, Body: c.body, OperationID: claim.Lease.OperationID, Actor: c.actor, Endpoint: c.ep}
	a, res, replayed, err := g.perform(ctx, c, claim, in)
	if err != nil {
		if errors.Is(err, crdb.ErrLostOwnership) {
			return true
		}
		if !a.Sent && a.Status == 0 {
			g.storeDown(c, err) // nothing was sent upstream
			return false
		}
		// The effect happened but the store did not take the result; the
		// record stays in progress and a later retry takes it over and
		// resolves it. Answer with what we know.
	}
	g.metrics.upstreamResult(ctx, c.ep.Name, string(res.State))
	g.metrics.request(ctx, c.ep.Name, result, c.start)
	if res.State == idempotency.OutcomeUnknown {
		g.log.WarnContext(ctx, "upstream outcome unknown", "operation_id", in.OperationID, "key", c.key, "err", redact(a.Err))
		writeProblem(c.w, problem{Type: "outcome-unknown", Title: "upstream outcome unknown",
			Detail: "the upstream did not answer in time; retry with the same key", Status: http.StatusGatewayTimeout,
			OperationID: in.OperationID.String(), OperationState: string(res.State)}, time.Second)
		return false
	}
	if a.Err != nil {
		writeProblem(c.w, problem{Type: "upstream-unavailable", Title: "upstream unreachable",
			Status: http.StatusBadGateway, OperationID: in.OperationID.String(),
			OperationState: string(res.State)}, time.Second)
		return false
	}
	writeAnswer(c.w, a, in.OperationID.String(), replayed)
	return false
}

// perform runs the intent (or, after a takeover of a crashed worker, finds
// out whether it already ran), keeping the lease alive meanwhile, and
// records the result. err is a store error: before anything was sent
// (a.Sent false, no status) or while recording the result.
func (g *Gateway) perform(ctx context.Context, c *call, claim crdb.Claim, in Invocation) (a Answer, res crdb.Result, replayed bool, err error) {
	lease := claim.Lease
	if c.ep.ResolvePath == "" && lease.LastStage == "" {
		// No way to ask the upstream later: leave a mark before sending.
		sctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
		err = g.cfg.Store.RecordStage(sctx, lease, stageSending)
		cancel()
		if err != nil {
			return Answer{}, crdb.Result{}, false, err
		}
	}
	stop := g.heartbeat(ctx, c, lease)
	a, res, replayed = g.execute(ctx, c, claim, in)
	stop()
	sctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
	err = g.cfg.Store.Finish(sctx, lease, res)
	cancel()
	switch {
	case errors.Is(err, crdb.ErrLostOwnership):
		// Expected after a takeover (this worker was paused or slow past
		// its lease): the taker's result stands.
		g.log.WarnContext(ctx, "result not recorded: operation taken over", "operation_id", in.OperationID, "key", c.key)
	case err != nil:
		g.log.ErrorContext(ctx, "finish failed", "operation_id", in.OperationID, "key", c.key, "err", err)
		a.Sent = true
	}
	return a, res, replayed, err
}

// execute runs the intent. After a takeover of a crashed worker's claim,
// when the upstream may already have run it, it asks the upstream first
// (resolve path), or — without one — runs it only if the crashed worker
// provably never sent it. replayed is true when the answer came from the
// upstream's record of an earlier run.
func (g *Gateway) execute(ctx context.Context, c *call, claim crdb.Claim, in Invocation) (Answer, crdb.Result, bool) {
	prior := claim.Record.State
	crashed := claim.Outcome == crdb.TakenOver && (prior == idempotency.InProgress || prior == idempotency.Pending)
	unknown := func(why string) (Answer, crdb.Result, bool) {
		return Answer{Err: errors.New("gateway: " + why), Sent: true},
			crdb.Result{State: idempotency.OutcomeUnknown, ErrorSummary: why}, false
	}
	switch {
	case crashed && c.ep.ResolvePath != "":
		switch v, a := g.cfg.Next.Resolve(ctx, in); v {
		case Ran:
			return a, g.result(c, a), true
		case Undetermined:
			return unknown("taken over; upstream state undetermined")
		}
	case crashed && claim.Record.LastStage == stageSending: // the record as the takeover found it
		return unknown("taken over after the request may have been sent; no resolve path")
	}
	a := g.cfg.Next.Execute(ctx, in)
	return a, g.result(c, a), false
}

// heartbeat extends the lease every third of its length until stop is
// called, so a slow upstream or handler is never taken over while it runs.
// stop waits for the heartbeat goroutine, so the lease is the caller's
// again when it returns.
func (g *Gateway) heartbeat(ctx context.Context, c *call, lease *crdb.Lease) (stop func()) {
	every := c.policy.Lease / 3
	done := make(chan struct{})
	quit := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				sctx, cancel := context.WithTimeout(ctx, every)
				err := g.cfg.Store.Heartbeat(sctx, lease)
				cancel()
				if errors.Is(err, crdb.ErrLostOwnership) {
					g.log.WarnContext(ctx, "lease lost while executing", "operation_id", lease.OperationID, "key", c.key)
					return
				}
				if err != nil {
					g.log.WarnContext(ctx, "heartbeat failed", "operation_id", lease.OperationID, "err", err)
				}
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// redact keeps an upstream error loggable: a *url.Error carries the full
// URL, query string included, which may hold what the client sent.
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
