package gateway

import (
	"net/http"

	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/store"
)

// windowPassed answers 409 downstream-window-passed: the claim would have
// sent the operation again (a takeover, a resume, the re-run of an
// unknown outcome), but it was first claimed longer ago than the
// endpoint's downstream_window, so the provider may have forgotten the key
// it ran under and a resend may be a second effect there. Nothing was
// sent; the record is left as it is for an operator (docs/runbook.md,
// "Past the downstream window"). No Retry-After: retrying changes nothing
// until an operator settles it, and a new key is not safe either.
func (g *Gateway) windowPassed(c *call, rec store.Record) {
	g.log.WarnContext(c.R.Context(), "not sent again: past the endpoint's downstream window; left for an operator",
		"endpoint", c.Endpoint.Name, "operation_id", rec.OperationID, "state", rec.State)
	c.Refuse("downstream_window_passed", exchange.Problem{Type: "downstream-window-passed",
		Title: "past the downstream provider's key window",
		Detail: "this operation was first attempted longer ago than the endpoint's downstream_window; sending it " +
			"again could run it twice at the provider, so nothing was sent and it waits for an operator to reconcile it; " +
			"do not start it over under a new key until they have",
		Status: http.StatusConflict, OperationID: rec.OperationID.String(), OperationState: string(rec.State),
		NewKeySafe: false})
}
