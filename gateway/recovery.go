package gateway

import "github.com/idemcoord/idemcoord/gateway/async"

// RecoveryConfig configures the loop that runs async work stranded by a
// dead instance, and the move sweep (async.RecoveryConfig).
type RecoveryConfig = async.RecoveryConfig

// Defaults for RecoveryConfig (the async stage's).
const (
	// DefaultRecoveryInterval is how often an instance looks for queued
	// async work whose instance died.
	DefaultRecoveryInterval = async.DefaultRecoveryInterval
	// DefaultRecoveryBatch bounds the tasks one scan takes over.
	DefaultRecoveryBatch = async.DefaultRecoveryBatch
	// DefaultMoveSweepInterval is how often an instance looks at its
	// directory cache for shards it has just received, besides at each
	// change of the cache.
	DefaultMoveSweepInterval = async.DefaultMoveSweepInterval
)
