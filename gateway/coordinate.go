package gateway

import (
	"time"

	"github.com/idemcoord/idemcoord/gateway/exchange"
)

// storeRetryAfter is the Retry-After of a 503 while the store is
// unreachable (exchange.StoreRetryAfter).
const storeRetryAfter = exchange.StoreRetryAfter

// storeCallTimeout bounds one store call (exchange.StoreCallTimeout).
var storeCallTimeout = exchange.StoreCallTimeout

// call is one coordinated request as it moves through the protocol: the
// stages' shared value (exchange.Request) and what only the pipeline
// keeps.
type call struct {
	exchange.Request
	// waitUntil is when a wait for the run in flight ends (await.go),
	// set the first time the request finds its operation in flight.
	waitUntil time.Time
}
