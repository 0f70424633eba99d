package sqlstore

import (
	"context"
	"errors"
	"net"

	"github.com/idemcoord/idemcoord/store"
	"github.com/jackc/pgx/v5/pgconn"
)

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
		// outage: 08 connection exceptions, 57P01-03 shutdowns, and a
		// server that takes no writes (primary.go).
		c := pgErr.Code
		// 25006 is a standby or a demoted primary: no primary answered.
		return len(c) == 5 && (c[:2] == "08" || c == "57P01" || c == "57P02" || c == "57P03") || readOnly(pgErr)
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
	if err == nil {
		return nil // before the targets below, which escape: no allocation on success
	}
	var (
		amb   *store.AmbiguousCommitError
		unav  *store.UnavailableError
		exhau *store.RetriesExhaustedError
	)
	if errors.As(err, &amb) || errors.As(err, &unav) || errors.As(err, &exhau) {
		return err
	}
	if unreachable(err) {
		return &store.UnavailableError{Err: err}
	}
	return err
}
