package gateway

import (
	"context"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// keepRecoveryPoint records, on an endpoint with on_retry: complete, the
// stage a retryably failed answer reports (HeaderStage on the 503) as the
// operation's last stage, through the worker's lease and before the
// failure is recorded: the next retry takes the failure over keeping it
// (store.ClaimRequest.KeepStages) and sends it upstream as
// HeaderResumeFrom, so the upstream runs the rest of the intent instead
// of all of it. Stages reported in 1xx answers while the attempt ran are
// recorded as they come (execute). A final or unknown outcome needs no
// recovery point: it is replayed, or resolved first.
func (g *Gateway) keepRecoveryPoint(ctx context.Context, c *call, guard *leaseGuard, a Answer, res store.Result) {
	if !c.ep.Completes() || res.State != idempotency.RetryableFailure || a.Err != nil {
		return
	}
	if st, ok := stageOf(a.Header); ok && !st.Cancelled() {
		g.recordStage(ctx, c, guard, st)
	}
}
