package sqlstore

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/idemcoord/idemcoord/clock"

	"github.com/cockroachdb/cockroach-go/v2/crdb"
	crdbpgx "github.com/cockroachdb/cockroach-go/v2/crdb/crdbpgxv5"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// retryable reports whether err is a serialization failure (40001) or a
// deadlock (40P01): the transaction did not commit and may be re-run whole.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "40001" || pgErr.Code == "40P01"
	}
	return false
}

// isUniqueViolation reports a 23505, which under SERIALIZABLE may be a
// serialization failure in disguise: the caller re-reads, then decides.
func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// ambiguous reports whether err, returned by a statement that commits (a
// COMMIT, or a single statement in autocommit), may hide a commit: the
// request may have reached the server and the connection failed before the
// answer came back.
func ambiguous(err error) bool {
	if err == nil || pgconn.SafeToRetry(err) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return false // the server answered: it did not commit
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return false // no connection, so nothing was sent
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled) || pgconn.Timeout(err)
}

// backoff sleeps before retry attempt n (n >= 1) on the backoff clock:
// exponential from the configured base with full jitter, capped at 64x base.
func (s *Store) backoff(ctx context.Context, n int) error {
	d := s.cfg.RetryBase << min(n-1, 6)
	s.randMu.Lock()
	d = time.Duration(s.rand.Int64N(int64(d) + 1))
	s.randMu.Unlock()
	return clock.Sleep(ctx, s.cfg.BackoffClock, d)
}

// retry runs attempt until it succeeds, fails with an error that is not a
// serialization failure, or MaxAttempts is reached. Every attempt is a whole
// transaction: on PostgreSQL a retry inside a savepoint would keep the old
// snapshot and fail forever under contention.
//
// Giving up is typed: *RetriesExhaustedError (ErrContention) when the
// attempts ran out, *UnavailableError (ErrUnavailable) when the store could
// not be used, *AmbiguousCommitError when a commit's outcome was lost.
func (s *Store) retry(ctx context.Context, op string, attempt func(ctx context.Context) error) error {
	for n := 1; ; n++ {
		err := attempt(ctx)
		if err == nil || !retryable(err) {
			return giveUp(err)
		}
		if n >= s.cfg.MaxAttempts {
			return &RetriesExhaustedError{Op: op, Attempts: n, Err: err}
		}
		s.metrics.txRetry(ctx, op)
		if err := s.backoff(ctx, n); err != nil {
			return err
		}
	}
}

// RunTx runs fn in a serializable transaction and commits it, retrying the
// whole transaction on 40001 and 40P01. fn may run several times and must
// have no side effects outside the transaction. A connection lost during
// COMMIT returns *AmbiguousCommitError.
//
// On CockroachDB it uses cockroach-go's ExecuteTx (savepoint retries, the
// server's own protocol). It never does on PostgreSQL, where ExecuteTx
// mistakes RELEASE SAVEPOINT for the commit and reports a failed COMMIT as
// success.
func (s *Store) RunTx(ctx context.Context, fn func(pgx.Tx) error) error {
	opts := pgx.TxOptions{IsoLevel: pgx.Serializable}
	if s.cockroach {
		err := crdbpgx.ExecuteTx(ctx, s.pool, opts, fn)
		var amb *crdb.AmbiguousCommitError
		if errors.As(err, &amb) {
			return &AmbiguousCommitError{Err: err}
		}
		var exhausted *crdb.MaxRetriesExceededError
		if errors.As(err, &exhausted) {
			return &RetriesExhaustedError{Op: "tx", Err: err} // cockroach-go counts the attempts
		}
		return giveUp(err)
	}
	return s.retry(ctx, "tx", func(ctx context.Context) error {
		tx, err := s.pool.BeginTx(ctx, opts)
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			tx.Rollback(ctx)
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			// Only the server's answer settles a COMMIT. pgx v5.12 reports
			// a connection lost while reading COMMIT's answer as "conn
			// closed", which claims SafeToRetry: never trust that here.
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) || errors.Is(err, pgx.ErrTxCommitRollback) {
				return err
			}
			return &AmbiguousCommitError{Err: err}
		}
		return nil
	})
}

// exec1 runs one statement as its own serializable transaction (the pool's
// default isolation is SERIALIZABLE), retrying on serialization failures.
// One round trip: the statement's result is its commit's result, so a lost
// connection after sending it is ambiguous.
func (s *Store) exec1(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	return s.retry(ctx, op, func(ctx context.Context) error {
		err := fn(ctx)
		if ambiguous(err) {
			return &AmbiguousCommitError{Err: err}
		}
		return err
	})
}
