package store

import (
	"errors"
	"fmt"

	"github.com/idemcoord/idemcoord/shard"
)

// Sentinel errors. Check them with errors.Is; the typed errors below match
// them and carry the detail. A stale fencing token is
// *fencing.StaleEpochError (errors.Is fencing.ErrStaleEpoch).
var (
	// ErrLostOwnership means a version-conditioned update affected no row:
	// another worker took the operation over, or it already finished. The
	// caller must stop and must not report its own result as the answer.
	ErrLostOwnership = errors.New("store: lost ownership of the operation")
	// ErrNotFound means no record matches.
	ErrNotFound = errors.New("store: operation not found")
	// ErrFingerprintVersion means a record was fingerprinted with an
	// algorithm version the caller cannot compute.
	ErrFingerprintVersion = errors.New("store: record's fingerprint version is not supported")
	// ErrNotPastWindow means ReconcilePastWindow was asked to settle an
	// operation that is not left past its downstream window: another
	// state, a live lease, a window not passed yet, or a result the
	// state cannot take.
	ErrNotPastWindow = errors.New("store: operation is not left past its downstream window")
	// ErrNotUnknown means a resolution was attempted on an operation that is
	// not in OUTCOME_UNKNOWN.
	ErrNotUnknown = errors.New("store: operation is not in OUTCOME_UNKNOWN")
	// ErrNotCancellable means a cancel was attempted on an operation that
	// is terminal, or whose last stage is irreversible.
	ErrNotCancellable = errors.New("store: operation cannot be cancelled")
	// ErrContention means the store gave up because other writers kept
	// winning: serialization retries were used up, or a claim found no
	// decision after its rounds. Nothing was written by the call that
	// failed. The store is healthy; the same request a moment later
	// usually succeeds, so a caller answers like "in progress" (409 with
	// Retry-After), not like an outage.
	ErrContention = errors.New("store: gave up under contention")
	// ErrUnavailable means the store could not be reached, or the
	// connection broke, so nothing was decided. A caller answers like an
	// outage (503 with Retry-After). *AmbiguousCommitError matches it
	// too: its write may also have happened.
	ErrUnavailable = errors.New("store: store unavailable")
	// ErrNotBootstrapped means the store has no shard count yet: no daemon
	// has run BootstrapFences against it, so no shard has an owner and
	// every write is refused by the fence. It is shard.ErrNotBootstrapped,
	// the one error for shards not set up (the etcd directory's too).
	ErrNotBootstrapped = shard.ErrNotBootstrapped
	// ErrDownstreamWindowPassed means a takeover was refused because the
	// operation was first claimed longer ago than the request's
	// ClaimRequest.DownstreamWindow: nothing changed, nothing may be sent.
	ErrDownstreamWindowPassed = errors.New("store: operation is past the downstream provider's key window")
	// ErrNoOperator is returned for a repair without an operator or a
	// reason.
	ErrNoOperator = errors.New("store: audit: operator and reason are required for every repair")
)

// RetriesExhaustedError reports that an operation gave up under contention.
// It matches ErrContention and unwraps to the last serialization failure
// (in the SQL store a *pgconn.PgError with code 40001 or 40P01) when there
// is one.
type RetriesExhaustedError struct {
	// Op names the operation ("claim", "finish", "tx", ...).
	Op string
	// Attempts is how many attempts the call ran (whole transactions,
	// statements and claim rounds, counted together against its budget).
	Attempts int
	// Err is the last failure, nil when the rounds ended without one (a
	// record that kept changing under the claim).
	Err error
}

// Error implements error.
func (e *RetriesExhaustedError) Error() string {
	switch {
	case e.Err == nil:
		return fmt.Sprintf("store: gave up under contention: %s found no decision after %d rounds", e.Op, e.Attempts)
	case e.Attempts == 0:
		return fmt.Sprintf("store: gave up under contention: %s: %v", e.Op, e.Err)
	}
	return fmt.Sprintf("store: gave up under contention: %s failed %d serialization attempts: %v", e.Op, e.Attempts, e.Err)
}

// Unwrap returns the last failure.
func (e *RetriesExhaustedError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrContention) true.
func (e *RetriesExhaustedError) Is(target error) bool { return target == ErrContention }

// UnavailableError reports that the store could not be reached or the
// connection failed before anything could have been written. It matches
// ErrUnavailable and unwraps to the connection error.
type UnavailableError struct {
	// Err is the connection error.
	Err error
}

// Error implements error.
func (e *UnavailableError) Error() string { return "store: store unavailable: " + e.Err.Error() }

// Unwrap returns the cause.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// AmbiguousCommitError reports that the connection was lost while a
// transaction's commit (or a single-statement transaction) may have been
// applied: the write may or may not have happened. Callers resolve it by
// re-running an idempotent read or claim, never by assuming either way.
// It matches ErrUnavailable.
type AmbiguousCommitError struct {
	// Err is the connection error that hid the outcome.
	Err error
}

// Error implements error.
func (e *AmbiguousCommitError) Error() string {
	return "store: commit outcome unknown: " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *AmbiguousCommitError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnavailable) true for an ambiguous commit: the
// connection broke, and the store is, for the caller, unavailable.
func (e *AmbiguousCommitError) Is(target error) bool { return target == ErrUnavailable }

// ShardCountMismatchError reports a daemon configured with a shard count
// other than the one the store was bootstrapped with. Actors would hash to
// other shards than the fences guard, so the daemon must not start.
type ShardCountMismatchError struct {
	// Store is the count the store recorded at bootstrap.
	Store int
	// Configured is the count the caller asked for.
	Configured int
}

// Error implements error.
func (e *ShardCountMismatchError) Error() string {
	return fmt.Sprintf("store: the store was bootstrapped with %d shards, the configuration says %d: "+
		"the shard count is fixed for the life of a deployment", e.Store, e.Configured)
}
