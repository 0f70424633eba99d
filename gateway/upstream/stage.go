package upstream

import (
	"context"
	"errors"
	"net/http"
	"net/textproto"

	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// HeaderStage is how an upstream reports the stage an operation is in
// (idempotency.Stage's wire form, e.g. "reserved;reversible" or
// "captured"): in informational 1xx answers while it runs the intent, in
// its final answer, in the answer to a cancel, and in a resolve answer's
// headers. The stage idempotency.StageCancelled says the operation was
// cancelled and never takes effect. Clients cannot send it: it is one of
// the reserved X-Idempotency-* headers.
const HeaderStage = "X-Idempotency-Stage"

// HeaderResumeFrom tells the upstream, on an endpoint with on_retry:
// complete, the recovery point a retried attempt resumes from: the last
// stage an earlier attempt of the operation reported (HeaderStage's form).
// The upstream runs the rest of the intent from there. Clients cannot
// send it (a reserved X-Idempotency-* header).
const HeaderResumeFrom = "X-Idempotency-Resume-From"

// stageOf returns the stage h reports, if it reports a well-formed one.
func stageOf(h http.Header) (idempotency.Stage, bool) {
	v := h.Get(HeaderStage)
	if v == "" {
		return idempotency.Stage{}, false
	}
	st, err := idempotency.ParseStage(v)
	return st, err == nil
}

// stagesOf returns the transport's hook for informational answers, which
// hands the stages they report to onStage (nil without one). It never
// fails the request: a stage the gateway cannot record is a hint lost,
// not a reason to abandon an upstream call that may be acting.
func stagesOf(onStage func(idempotency.Stage)) func(int, textproto.MIMEHeader) error {
	if onStage == nil {
		return nil
	}
	return func(_ int, h textproto.MIMEHeader) error {
		if st, ok := stageOf(http.Header(h)); ok && !st.Cancelled() {
			onStage(st)
		}
		return nil
	}
}

// recordStage records a stage the upstream reported while the worker
// waits for its answer, through the worker's lease (it takes turns with
// the heartbeat), so a cancel the store can refuse is refused without
// asking the upstream. A stage that is not recorded is logged and left:
// the upstream still decides every cancel it is asked.
func (s *Stage) recordStage(ctx context.Context, c *exchange.Request, guard *leaseGuard, st idempotency.Stage) {
	err := guard.stage(ctx, st)
	switch {
	case err == nil:
		s.log.InfoContext(ctx, "upstream stage recorded", "operation_id", guard.lease.OperationID,
			"endpoint", c.Endpoint.Name, "stage", st.String())
	case errors.Is(err, store.ErrLostOwnership):
		s.log.InfoContext(ctx, "upstream stage not recorded: the operation moved on (cancelled or taken over)",
			"operation_id", guard.lease.OperationID, "endpoint", c.Endpoint.Name, "stage", st.String())
	default:
		s.log.WarnContext(ctx, "upstream stage not recorded", "operation_id", guard.lease.OperationID,
			"endpoint", c.Endpoint.Name, "stage", st.String(), "err", err)
	}
}

// stage records st as the operation's last stage, through the lease.
func (l *leaseGuard) stage(ctx context.Context, st idempotency.Stage) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	sctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
	defer cancel()
	return l.store.RecordStage(sctx, l.lease, st.String())
}
