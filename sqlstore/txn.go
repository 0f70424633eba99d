package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/idemcoord/idemcoord/internal/idemconv"
	"github.com/idemcoord/idemcoord/internal/retry"
	"github.com/idemcoord/idemcoord/store"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// retryable reports whether err is a serialization failure (40001), a
// deadlock (40P01), CockroachDB's older restart code (CR000) or a server
// that no longer takes writes (25006, a demoted primary whose connection
// onPgError closed: the next attempt connects to the new one): the
// transaction did not commit and may be re-run whole.
//
// An outage (no server could take the attempt: a cluster between two
// primaries) is retryable too; the loop waits it out for the budget's
// Hold (outage) instead of spending attempts.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01" || pgErr.Code == "CR000") {
		return true
	}
	return outage(err)
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
	if errors.As(err, new(*UnreplicatedCommitError)) {
		return true // committed on the primary only (syncrep.go)
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled) || pgconn.Timeout(err)
}

// retry runs attempt until it succeeds, fails with an error that is not a
// serialization failure, or the call's budget (retry.Budgets.Store: attempts
// and total time, shared with every loop of the same call) runs out. Every
// attempt is a whole transaction: on PostgreSQL a retry inside a savepoint
// would keep the old snapshot and fail forever under contention.
//
// Giving up is typed: *RetriesExhaustedError (ErrContention) when the
// budget ran out, *UnavailableError (ErrUnavailable) when the store could
// not be used, *AmbiguousCommitError when a commit's outcome was lost.
func (s *Store) retry(ctx context.Context, op string, attempt func(ctx context.Context) error) error {
	return s.do(ctx, op, retryable, attempt)
}

// do is the store's one retry loop (retry.Loop): attempt runs again while
// again accepts its error and the call's budget lasts. It returns the typed
// errors of retry.
func (s *Store) do(ctx context.Context, op string, again func(error) bool, attempt func(ctx context.Context) error) error {
	// An inner loop that gave up spent the call's budget: the outer one
	// gives up with it instead of wrapping it again.
	ctx, w := watching(ctx)
	err := s.loop.Do(ctx, op, func(err error) bool {
		if gaveUp(err) || !again(err) {
			return false
		}
		traceRetry(ctx, op, err)
		return true
	}, func(ctx context.Context) error {
		return s.confirm(ctx, w, attempt(ctx))
	})
	if err == nil {
		return nil // before the targets below, which escape: no allocation on success
	}
	var (
		ex  *retry.ExhaustedError
		amb *store.AmbiguousCommitError
	)
	switch {
	case errors.As(err, &ex) && errors.As(ex.Err, &amb):
		// The store kept losing the answer: that is an outage, not contention.
		return &stillAmbiguous{op: op, attempts: ex.Attempts, err: ex.Err}
	case errors.As(err, &ex) && unreachable(ex.Err):
		// No server took writes (no primary yet): an outage too.
		return &store.UnavailableError{Err: ex}
	case errors.As(err, &ex):
		return &store.RetriesExhaustedError{Op: op, Attempts: ex.Attempts, Err: ex.Err}
	}
	return giveUp(err)
}

// traceRetry adds an idemcoord.retry event to the span in ctx (the
// caller's store call span, storeotel's), when it records, for an attempt
// err makes run again: with the SQLSTATE as db.response.status_code, so a
// serialization failure (40001) the loop absorbed stays visible.
func traceRetry(ctx context.Context, op string, err error) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{idemconv.RetryOp.String(op)}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		attrs = append(attrs, semconv.DBResponseStatusCode(pgErr.Code))
	}
	span.AddEvent(idemconv.RetryEvent, trace.WithAttributes(attrs...))
}

// stillAmbiguous reports a call whose budget ran out while its last
// attempt's outcome was unknown. It matches *AmbiguousCommitError.
type stillAmbiguous struct {
	op       string
	attempts int
	err      error
}

func (e *stillAmbiguous) Error() string {
	return fmt.Sprintf("sqlstore: %s: outcome stayed ambiguous after %d attempts: %v", e.op, e.attempts, e.err)
}

func (e *stillAmbiguous) Unwrap() error { return e.err }

// gaveUp reports an error of a loop that spent the call's budget.
func gaveUp(err error) bool {
	return errors.As(err, new(*store.RetriesExhaustedError)) || errors.As(err, new(*stillAmbiguous))
}

// call returns ctx for one store call: it carries the call's budget, the
// caller's when ctx has one (a gateway round), else a new one of
// retry.Budgets.Store with its total time as the deadline.
func (s *Store) call(ctx context.Context) (context.Context, func()) { return s.loop.Call(ctx) }

// start is call with an Ender for a done function: one allocation fewer
// (retry.Loop.Start), for the calls of every first run.
func (s *Store) start(ctx context.Context) (context.Context, retry.Ender) { return s.loop.Start(ctx) }

// RunTx runs fn in a serializable transaction and commits it, retrying the
// whole transaction on serialization failures (retry). fn may run several
// times and must have no side effects outside the transaction. A
// connection lost during COMMIT returns *AmbiguousCommitError.
//
// CockroachDB is retried the same way, whole transactions: cockroach-go's
// ExecuteTx (savepoint retries) is not used, since it would be a second
// loop with a budget of its own, and on PostgreSQL it mistakes RELEASE
// SAVEPOINT for the commit and reports a failed COMMIT as success.
func (s *Store) RunTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return s.retry(ctx, "tx", func(ctx context.Context) error { return s.txOnce(ctx, fn) })
}

// txOnce is one attempt of RunTx: one serializable transaction.
func (s *Store) txOnce(ctx context.Context, fn func(pgx.Tx) error) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.Serializable})
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback(ctx)
		return err
	}
	return commitOutcome(tx.Commit(ctx))
}

// commitOutcome is the one judge of a commit's answer: nil, a failure the
// server answered (it did not commit), or *AmbiguousCommitError when the
// answer was lost or the server itself could not say (CockroachDB's 40003,
// statement_completion_unknown).
func commitOutcome(err error) error {
	if err == nil {
		return nil
	}
	// Only the server's answer settles a COMMIT. pgx v5.12 reports a
	// connection lost while reading COMMIT's answer as "conn closed", which
	// claims SafeToRetry: never trust that here.
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code != "40003" || errors.Is(err, pgx.ErrTxCommitRollback) {
		return err
	}
	return &store.AmbiguousCommitError{Err: err}
}

// exec1 runs one statement as its own serializable transaction (the pool's
// default isolation is SERIALIZABLE), retrying on serialization failures.
func (s *Store) exec1(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	return s.retry(ctx, op, func(ctx context.Context) error { return stmtOutcome(fn(ctx)) })
}

// isAmbiguous reports whether err is an *AmbiguousCommitError: what
// stmtOutcome or commitOutcome made of a lost answer or of CockroachDB's
// 40003. The batch paths ask it of a member's share of a batch statement,
// so a batch is ambiguous exactly when the same statement alone would be.
func isAmbiguous(err error) bool {
	return err != nil && errors.As(err, new(*store.AmbiguousCommitError))
}

// stmtOutcome judges a statement that commits alone: one round trip, its
// result is its commit's result, so a lost connection after sending it is
// ambiguous (*AmbiguousCommitError).
func stmtOutcome(err error) error {
	if err == nil {
		return nil // before the target below, which escapes: no allocation on success
	}
	if ambiguous(err) {
		return &store.AmbiguousCommitError{Err: err}
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "40003" {
		return &store.AmbiguousCommitError{Err: err}
	}
	return err
}
