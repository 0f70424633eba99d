package routing

import (
	"context"
	"net/http"

	"github.com/idemcoord/idemcoord/failover"
)

// Ownership states of a shard, as the ownership directory records them.
const (
	// ShardActive: the owner region serves the shard.
	ShardActive = "ACTIVE"
	// ShardFencing: a transfer is under way (the epoch has been bumped in
	// the directory, maybe not yet in the store). Nobody serves the shard
	// until the transfer completes.
	ShardFencing = "FENCING"
	// ShardFailedOver: the owner region took the shard over after its
	// previous owner failed. It serves it like ACTIVE; what each endpoint
	// does there is the failover policy's business.
	ShardFailedOver = "FAILED_OVER"
)

// Owners tells which region owns each shard. It is a hint read from a
// local, watch-fed cache of the ownership directory, and Owner must do no
// I/O: a request consults it once and never waits on etcd. The SQL fence
// stays the authority; a claim made on a stale hint is refused there.
type Owners interface {
	// Owner returns the shard's owner region, the epoch of that ownership
	// and the shard's state (ShardActive, ShardFencing, ShardFailedOver).
	// ok is false when the cache does not know the shard (not loaded yet).
	Owner(shard int) (region string, epoch int64, state string, ok bool)
}

// HeaderForwardedFrom marks a request forwarded by another region's
// gateway and names that region. A request carrying it is never forwarded
// again. Any client can set it; all it can cause is a refusal where the
// request would otherwise have been forwarded (see route.go), and like
// every X-Idempotency- header it is stripped before anything else reads
// the request, so it never reaches an upstream.
const HeaderForwardedFrom = "X-Idempotency-Forwarded-From"

// forwardedKey is the context key under which the gateway keeps the
// HeaderForwardedFrom value it read before stripping identity headers.
type forwardedKey struct{}

// WithForwardedFrom returns r carrying the hop header's value (unchanged r
// when there is none).
func WithForwardedFrom(r *http.Request, from string) *http.Request {
	if from == "" {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), forwardedKey{}, from))
}

// ForwardedFrom returns the region that forwarded the request, as claimed
// by its hop header, or "".
func ForwardedFrom(ctx context.Context) string {
	from, _ := ctx.Value(forwardedKey{}).(string)
	return from
}

// RegionHealth tells how a region's liveness looks, from a local view
// kept up to date elsewhere (no I/O): *failover.Tracker.
type RegionHealth interface {
	State(region string) failover.RegionState
}

var _ RegionHealth = (*failover.Tracker)(nil)
