package sqlstore

import (
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
