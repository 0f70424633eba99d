package ownership

import (
	"errors"
	"fmt"

	"github.com/idemcoord/idemcoord/shard"
)

var (
	// ErrShardCount is returned when etcd holds a shard count other than
	// the configured one: the actor hash would disagree with the directory
	// and the fence rows, so the daemon must not start.
	ErrShardCount = errors.New("ownership: shard count disagrees with the directory")
	// ErrNotBootstrapped is returned when the directory has no shard count
	// or no entry for a shard: run Bootstrap first. It is
	// shard.ErrNotBootstrapped, the one error for shards not set up (the
	// SQL store's fences too).
	ErrNotBootstrapped = shard.ErrNotBootstrapped
	// ErrCorrupt is returned for a directory value that does not parse or
	// breaks an invariant (no owner, epoch below 1, unknown state).
	ErrCorrupt = errors.New("ownership: corrupt directory entry")
	// ErrFenceDiverged is returned when the SQL fence refuses a transfer
	// that etcd recorded: the two disagree and an operator must look. The
	// shard stays FENCING (nobody writes it) until then.
	ErrFenceDiverged = errors.New("ownership: SQL fence and etcd directory disagree")
	// ErrBadMove is returned for a move request that cannot be right (no
	// target region, an unknown final state, a shard out of range).
	ErrBadMove = errors.New("ownership: invalid move")
	// ErrGuardFailed is returned when a Guard given to Move no longer
	// holds (the mover lost its election or its lease). Nothing changed.
	ErrGuardFailed = errors.New("ownership: move guard no longer holds")
	// ErrNotLive is returned by Liveness.Live when the instance cannot
	// prove its lease is still valid.
	ErrNotLive = errors.New("ownership: liveness lease not provably valid")
	// ErrClosed is returned by a Liveness or Cache that was closed.
	ErrClosed = errors.New("ownership: closed")
)

// ShardCountError reports a configured shard count that etcd contradicts.
type ShardCountError struct {
	// Configured is the count the caller asked for.
	Configured int
	// Stored is the count the directory holds.
	Stored int
}

// Error implements error.
func (e *ShardCountError) Error() string {
	return fmt.Sprintf("ownership: configured shards=%d but the directory was bootstrapped with %d; "+
		"the shard count is fixed for the life of a deployment", e.Configured, e.Stored)
}

// Unwrap makes errors.Is(err, ErrShardCount) true.
func (e *ShardCountError) Unwrap() error { return ErrShardCount }
