package exchange

import (
	"time"

	"github.com/idemcoord/idemcoord/internal/retry"
)

// OwnershipRetryAfter is the Retry-After of a 503 caused by ownership (a
// transfer in progress, a cache not loaded yet, two regions' views
// disagreeing, an owner region unreachable, a run whose shard moved): a
// transfer completes and a watch catches up within about a second, so a
// client retrying after one second usually lands in a settled view.
const OwnershipRetryAfter = time.Second

// StoreCallTimeout bounds one store call of a stage: a store that does not
// answer in this long is treated as down (503), not waited on forever.
var StoreCallTimeout = retry.Default.Store.Total
