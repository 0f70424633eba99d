package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/jackc/pgx/v5/pgconn"
)

// Sentinels for the two ways the store gives up. Check them with errors.Is;
// the typed errors below match them and carry the detail.
var (
	// ErrContention means the store gave up because other writers kept
	// winning: serialization retries were used up, or a claim found no
	// decision after its rounds. Nothing was written by the call that
	// failed. The store is healthy; the same request a moment later
	// usually succeeds, so a caller answers like "in progress" (409 with
	// Retry-After), not like an outage.
	ErrContention = errors.New("sqlstore: gave up under contention")
	// ErrUnavailable means the store could not be reached, or the
	// connection broke, so nothing was decided. A caller answers like an
	// outage (503 with Retry-After). *AmbiguousCommitError matches it
	// too: its write may also have happened.
	ErrUnavailable = errors.New("sqlstore: store unavailable")
)

// RetriesExhaustedError reports that an operation gave up under contention.
// It matches ErrContention and unwraps to the last serialization failure
// (a *pgconn.PgError with code 40001 or 40P01) when there is one.
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
		return fmt.Sprintf("sqlstore: gave up under contention: %s found no decision after %d rounds", e.Op, e.Attempts)
	case e.Attempts == 0:
		return fmt.Sprintf("sqlstore: gave up under contention: %s: %v", e.Op, e.Err)
	}
	return fmt.Sprintf("sqlstore: gave up under contention: %s failed %d serialization attempts: %v", e.Op, e.Attempts, e.Err)
}

// Unwrap returns the last failure.
func (e *RetriesExhaustedError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrContention) true.
func (e *RetriesExhaustedError) Is(target error) bool { return target == ErrContention }

// UnavailableError reports that the store could not be reached or the
// connection failed before anything could have been written. It matches
// ErrUnavailable and unwraps to the connection error (a
// *pgconn.ConnectError when no connection could be made).
type UnavailableError struct {
	// Err is the connection error.
	Err error
}

// Error implements error.
func (e *UnavailableError) Error() string { return "sqlstore: store unavailable: " + e.Err.Error() }

// Unwrap returns the cause.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Is makes errors.Is(err, ErrUnavailable) true for an ambiguous commit: the
// connection broke, and the store is, for the caller, unavailable.
func (e *AmbiguousCommitError) Is(target error) bool { return target == ErrUnavailable }

// unreachable reports a connection failure that proves nothing was sent
// (or that the server refused before executing): no connection could be
// made, or pgx knows the statement never left. A context that ended is the
// caller's choice, not an outage, and is left alone.
func unreachable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// The server answered; only "cannot connect now" classes are an
		// outage: 08 connection exceptions, 57P01-03 shutdowns.
		c := pgErr.Code
		return len(c) == 5 && (c[:2] == "08" || c == "57P01" || c == "57P02" || c == "57P03")
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return true
	}
	var netErr net.Error
	return pgconn.SafeToRetry(err) || errors.As(err, &netErr)
}

// giveUp wraps an error that ended a store call in the typed error that
// says how the store gave up (UnavailableError for a connection that could
// not be used), unless it already is one.
func giveUp(err error) error {
	var (
		amb   *AmbiguousCommitError
		unav  *UnavailableError
		exhau *RetriesExhaustedError
	)
	if err == nil || errors.As(err, &amb) || errors.As(err, &unav) || errors.As(err, &exhau) {
		return err
	}
	if unreachable(err) {
		return &UnavailableError{Err: err}
	}
	return err
}
