package fencing

import (
	"errors"
	"fmt"
)

// ErrMoveConflict is returned when a move's compare-and-swap finds the
// shard at another epoch or owner than the move expected: someone else
// moved it first. Nothing was changed.
var ErrMoveConflict = errors.New("fencing: shard moved concurrently")

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
