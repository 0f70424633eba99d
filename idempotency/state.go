package idempotency

import (
	"errors"
	"fmt"
)

// State is where one operation stands. The states and the transitions between
// them are the whole protocol; Transition is the one place that enforces them.
type State string

// The states of an operation.
const (
	// Pending: the key is claimed and nothing has run yet.
	Pending State = "PENDING"
	// InProgress: a worker holds the lease and is executing.
	InProgress State = "IN_PROGRESS"
	// Completed: the intent ran and its response snapshot is stored; retries replay it.
	Completed State = "COMPLETED"
	// RetryableFailure: the attempt failed in a way that did not take effect
	// (429, transient 5xx, store down); the next retry re-runs it.
	RetryableFailure State = "RETRYABLE_FAILURE"
	// TerminalFailure: a deterministic failure; retries replay the stored error.
	TerminalFailure State = "TERMINAL_FAILURE"
	// OutcomeUnknown: the external call may or may not have taken effect. It
	// must be resolved (downstream queried by operation id, or reconciled by
	// an operator) before anything re-runs it.
	OutcomeUnknown State = "OUTCOME_UNKNOWN"
	// Cancelled: the owning actor cancelled the operation and the upstream
	// confirmed it never takes effect (it had not entered an irreversible
	// stage). Terminal: retries replay the stored cancellation.
	Cancelled State = "CANCELLED"
)

// ErrIllegalTransition is returned by Transition for a move the state
// machine forbids.
var ErrIllegalTransition = errors.New("idempotency: illegal state transition")

// legal lists, for each state, the states it may move to.
var legal = map[State][]State{
	Pending:          {InProgress, Completed, RetryableFailure, TerminalFailure, OutcomeUnknown, Cancelled},
	InProgress:       {InProgress, Completed, RetryableFailure, TerminalFailure, OutcomeUnknown, Cancelled},
	RetryableFailure: {InProgress, Cancelled},
	OutcomeUnknown:   {InProgress, Completed, TerminalFailure, RetryableFailure, Cancelled},
	Completed:        nil,
	TerminalFailure:  nil,
	Cancelled:        nil,
}

// Valid reports whether s is one of the seven states.
func (s State) Valid() bool {
	_, ok := legal[s]
	return ok
}

// Terminal reports whether s is final: its result is replayed for the rest
// of the key's life and no worker will ever run the intent again.
func (s State) Terminal() bool { return s == Completed || s == TerminalFailure || s == Cancelled }

// Resting reports whether no worker is executing in state s, so TTL cleanup
// may delete it once expired. OutcomeUnknown is not resting: the effect may
// have happened, and deleting the record would let a retry run it twice.
func (s State) Resting() bool { return s.Terminal() || s == RetryableFailure }

// Transition checks that an operation may move from one state to another.
// InProgress to InProgress is a lease takeover or heartbeat. OutcomeUnknown
// leaves only by resolution: Completed or TerminalFailure if the downstream
// says it ran, RetryableFailure or InProgress (a re-run) if the downstream
// proves it did not. Cancelled is reached from any state that is not
// terminal, and only once the upstream confirmed the cancel (see Stage).
func Transition(from, to State) error {
	next, ok := legal[from]
	if !ok {
		return fmt.Errorf("%w: unknown state %q", ErrIllegalTransition, from)
	}
	for _, n := range next {
		if n == to {
			return nil
		}
	}
	return fmt.Errorf("%w: %s -> %s", ErrIllegalTransition, from, to)
}
