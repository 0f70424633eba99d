package upstream

import (
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/idempotency"
)

// recoveryPoint is the stage a retryably failed answer (a, classified as
// state) reports in HeaderStage, on an endpoint with on_retry: complete:
// the recovery point the store records with the failure
// (store.Result.Stage), in the same write, whichever path learned the
// answer: the worker's live answer, a takeover's resolve, or a retry's
// resolve of an OUTCOME_UNKNOWN. The next retry takes the failure over
// keeping it (store.ClaimRequest.KeepStages) and sends it upstream as
// HeaderResumeFrom, so the upstream runs the rest of the intent instead
// of all of it, and a stage it reported done is never repeated. Stages
// reported in 1xx answers while the attempt ran are recorded as they come
// (execute). A final or unknown outcome needs no recovery point: it is
// replayed, or resolved first.
func recoveryPoint(c *exchange.Request, a Answer, state idempotency.State) string {
	if !c.Endpoint.Completes() || state != idempotency.RetryableFailure || a.Err != nil {
		return ""
	}
	if st, ok := stageOf(a.Header); ok && !st.Cancelled() {
		return st.String()
	}
	return ""
}
