package fencing

import (
	"errors"
	"fmt"
)

// ErrMoveConflict is returned when a move's compare-and-swap finds the
// shard at another epoch or owner than the move expected: someone else
// moved it first. Nothing was changed.
var ErrMoveConflict = errors.New("fencing: shard moved concurrently")

// ErrNotDrained is returned by a draining move while operations claimed at
// the retiring epoch are still in flight: nothing was changed; try again
// once they finished, or move without draining.
var ErrNotDrained = errors.New("fencing: operations still in flight at the retiring epoch")

// Move is one ownership change of a shard: the fence goes from epoch From
// to From+1, owned by region To. A move is applied as a compare-and-swap on
// From, so two concurrent moves of one shard cannot both succeed, and
// applying the same move twice is a no-op (a mover that died half-way is
// rolled forward by the next one).
type Move struct {
	// Shard is the shard being moved.
	Shard int
	// From is the epoch being retired; the move writes From+1.
	From int64
	// To is the region that owns the shard from epoch From+1 on.
	To string
	// Operator names who asked for the move (a person, or "controller").
	Operator string
	// Reason says why, for the audit log.
	Reason string
	// Drain makes the compare-and-swap apply only while no operation of
	// the shard claimed at epoch From is still in flight (PENDING or
	// IN_PROGRESS under a live lease); otherwise the move returns
	// ErrNotDrained and changes nothing. A planned move drains, so the old
	// owner records the results of what it already started instead of
	// leaving them to a takeover after their lease; a failover does not
	// (the old owner cannot finish anything).
	Drain bool
}

// Epoch returns the epoch the move installs.
func (m Move) Epoch() int64 { return m.From + 1 }

// String formats the move for logs and audit rows.
func (m Move) String() string {
	return fmt.Sprintf("shard=%d epoch %d->%d to=%q", m.Shard, m.From, m.From+1, m.To)
}

// MoveConflictError reports a move whose compare-and-swap failed.
type MoveConflictError struct {
	// Move is the move that was refused.
	Move Move
	// Epoch and Owner are what the shard holds now.
	Epoch int64
	Owner string
}

// Error implements error.
func (e *MoveConflictError) Error() string {
	return fmt.Sprintf("fencing: move %s refused: shard is at epoch %d owned by %q", e.Move, e.Epoch, e.Owner)
}

// Unwrap makes errors.Is(err, ErrMoveConflict) true.
func (e *MoveConflictError) Unwrap() error { return ErrMoveConflict }
