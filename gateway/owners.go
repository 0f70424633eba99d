package gateway

import "github.com/idemcoord/idemcoord/gateway/routing"

// Ownership states of a shard, as the ownership directory records them
// (routing's).
const (
	// ShardActive: the owner region serves the shard.
	ShardActive = routing.ShardActive
	// ShardFencing: a transfer is under way; nobody serves the shard.
	ShardFencing = routing.ShardFencing
	// ShardFailedOver: the owner region took the shard over after its
	// previous owner failed.
	ShardFailedOver = routing.ShardFailedOver
)

// Owners tells which region owns each shard (routing.Owners).
type Owners = routing.Owners

// RegionHealth tells how a region's liveness looks (routing.RegionHealth).
type RegionHealth = routing.RegionHealth

// HeaderForwardedFrom marks a request forwarded by another region's
// gateway and names that region (routing.HeaderForwardedFrom).
const HeaderForwardedFrom = routing.HeaderForwardedFrom
