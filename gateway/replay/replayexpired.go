package replay

import (
	"net/http"

	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/store"
)

// Expired answers a retry whose record is a dedup marker: the
// operation finished (it ran, once) and its full answer was dropped after
// the endpoint's replay_ttl (sqlstore/compact.go). The answer is 410
// replay-expired with what the marker keeps: the operation id, its final
// state, the status it answered and the created resource's id. Nothing
// runs again, and a new key would run the intent a second time
// (new_key_safe false). Idempotency-Status is replayed: the answer is
// derived from the key's recorded outcome.
func Expired(c *exchange.Request, rec store.Record) {
	c.Refuse("replay_expired", exchange.Problem{Type: "replay-expired",
		Title: "the operation finished; its answer is no longer kept",
		Detail: "this key's operation ran once and finished; its full answer was kept for the endpoint's replay_ttl " +
			"and is gone, so it is not replayed and nothing runs again",
		Status: http.StatusGone, OperationID: rec.OperationID.String(), OperationState: string(rec.State),
		RecordedStatus: rec.Snapshot.Status, ResourceID: rec.Snapshot.ResourceID})
}
