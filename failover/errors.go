package failover

import (
	"errors"

	"github.com/idemcoord/idemcoord/store"
)

var (
	// ErrBadConfig is returned by Config.Validate; the message names the
	// field.
	ErrBadConfig = errors.New("failover: invalid config")
	// ErrNoOperator is returned for a repair without an operator or a
	// reason: every repair is audited with both. It is store.ErrNoOperator,
	// the one error for an unaudited repair, so errors.Is matches either
	// name whichever layer refused.
	ErrNoOperator = store.ErrNoOperator
	// ErrUnknownRegion is returned for a region the topology lacks.
	ErrUnknownRegion = errors.New("failover: unknown region")
	// ErrNoTarget is returned when a shard has no region to move to (every
	// candidate is the region being left or unhealthy).
	ErrNoTarget = errors.New("failover: no healthy region to move the shard to")
	// ErrNotFailedOver is returned by Accept for a shard that is FENCING:
	// a transfer is under way, accept after it ends.
	ErrNotFailedOver = errors.New("failover: shard is not FAILED_OVER")
	// ErrConflict is returned when a shard changed between the read a
	// repair decided on and its write: nothing was written; read again.
	ErrConflict = errors.New("failover: shard changed concurrently")
	// ErrRegionBack is returned by a region's failover when an instance
	// of the region registered again while its shards were being moved:
	// the moves not yet started are refused (ownership.GuardStart), so
	// nothing more leaves a region that is back.
	ErrRegionBack = errors.New("failover: region registered again during its failover")
)
