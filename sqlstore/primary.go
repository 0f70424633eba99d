package sqlstore

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// A multi-host DSN with target_session_attrs=read-write (Patroni without
// a proxy) picks the primary when a connection opens, and never checks
// again: after a switchover or a failover the pool's connections to the
// old primary stay open, now to a standby, and every write on them fails
// with 25006 (read_only_sql_transaction). onPgError closes such a
// connection as the error arrives, so the pool opens a new one, which
// finds the new primary; the statement itself did not commit (the server
// refused it) and the store's loop runs it again (retryable).

// outage reports a failure that proves its attempt did nothing because no
// server could take it now, as while a Patroni cluster moves its primary:
// no connection could be made (the old primary shutting down, 57P03; the
// others still standbys, which target_session_attrs=read-write refuses),
// a connection pgx never sent the statement on, a server that takes no
// writes (25006, closed by onPgError), or one that ended the session with
// an error before anything committed (57P01 and 57P02 shutdowns, class
// 08). A lost connection with no answer is not one: a statement that
// commits may have committed (ambiguous, settled by the store's rules).
func outage(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		c := pgErr.Code
		return c == "57P01" || c == "57P02" || c == "57P03" || strings.HasPrefix(c, "08") || readOnly(pgErr)
	}
	return errors.As(err, new(*pgconn.ConnectError)) || pgconn.SafeToRetry(err)
}

// readOnly reports an error of a server that does not take writes now: a
// standby, or a demoted primary.
func readOnly(pgErr *pgconn.PgError) bool {
	return pgErr.Code == "25006" || strings.Contains(pgErr.Message, "read-only transaction")
}

// onPgError is the pool's PostgreSQL error handler: it closes a
// connection on FATAL (pgconn's default) and on a server that no longer
// takes writes (readOnly). It returns false to close.
func onPgError(_ *pgconn.PgConn, pgErr *pgconn.PgError) bool {
	return !strings.EqualFold(pgErr.Severity, "FATAL") && !readOnly(pgErr)
}
