package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemcoord/idemcoord/store"
)

// A commit that PostgreSQL stopped waiting for on synchronous replication
// (the wait was cancelled, or the backend told to terminate) is committed
// on the primary only, and PostgreSQL answers it as a success with a
// WARNING ("canceling wait for synchronous replication ...; the
// transaction has already committed locally, but might not have been
// replicated to the standby"). Under Patroni's synchronous_mode_strict
// that commit is on no member Patroni may promote: a failover loses it.
// Taking it as success would acknowledge a write that may vanish, so the
// store watches every connection's notices and judges such a commit
// ambiguous instead (*AmbiguousCommitError wrapping
// *UnreplicatedCommitError), to be settled by the existing rules.
//
// The settle is the subtle part: a re-read on the same primary sees the
// local-only commit and would call it applied. So once a call has seen
// such a commit, none of its later attempts counts as success until a
// replication barrier passes: a tiny write transaction (barrierSQL,
// whose COMMIT waits for the synchronous standby) that commits without
// the warning. Its commit record is after
// every earlier commit on that server, so when it is acknowledged they
// are all on the standby. Until then the call stays ambiguous and, out of
// budget, gives up as ambiguous; after a failover the settle runs on the
// new primary, where only replicated commits exist.
//
// The warning is matched by its English text (PostgreSQL gives it no
// SQLSTATE of its own): run the store's servers with lc_messages = 'C'
// or an English locale.

// UnreplicatedCommitError is the cause of an *AmbiguousCommitError whose
// COMMIT the server answered with a warning that it committed locally
// but stopped waiting for synchronous replication.
type UnreplicatedCommitError struct {
	// Notice is the server's warning.
	Notice string
}

func (e *UnreplicatedCommitError) Error() string {
	return "sqlstore: commit not confirmed by the synchronous standby: " + e.Notice
}

// syncRepKey is the connection's CustomData key of a pending warning.
const syncRepKey = "idemcoord.syncrep"

// syncRepCancelled reports PostgreSQL's warning of a commit whose wait
// for synchronous replication ended without the standby's confirmation.
func syncRepCancelled(n *pgconn.Notice) bool {
	return strings.EqualFold(n.Severity, "WARNING") && strings.Contains(n.Message, "synchronous replication")
}

// onNotice keeps a sync-rep warning on the connection until the
// statement that drew it ends (commitTracer).
func onNotice(pc *pgconn.PgConn, n *pgconn.Notice) {
	if syncRepCancelled(n) {
		pc.CustomData()[syncRepKey] = n
	}
}

// commitWatch is one store call's record of commits that were not
// confirmed replicated. The call's attempts run one at a time; the
// atomic is for the group commit's leader, which runs a batch on its
// own member's context.
type commitWatch struct {
	unreplicated atomic.Pointer[pgconn.Notice]
}

type watchKey struct{}

// watching returns ctx with a commit watch: the one ctx already carries
// (an outer loop of the same call), or a new one.
func watching(ctx context.Context) (context.Context, *commitWatch) {
	if w, ok := ctx.Value(watchKey{}).(*commitWatch); ok {
		return ctx, w
	}
	return newWatch(ctx)
}

// newWatch returns ctx carrying a new commit watch (a batch's own).
func newWatch(ctx context.Context) (context.Context, *commitWatch) {
	c := &watchCtx{Context: ctx}
	return c, &c.w
}

// watchCtx is a context carrying a commit watch: context.WithValue's,
// with the watch in the context's own allocation (two allocations of
// every store call were the watch and the value context).
type watchCtx struct {
	context.Context
	w commitWatch
}

// Value implements context.Context.
func (c *watchCtx) Value(key any) any {
	if _, ok := key.(watchKey); ok {
		return &c.w
	}
	return c.Context.Value(key)
}

// commitTracer moves a sync-rep warning from the connection that drew it
// to the watch of the call whose statement it was, then passes every
// event on to next (Config.Tracer).
type commitTracer struct{ next pgx.QueryTracer }

func (t commitTracer) TraceQueryStart(ctx context.Context, c *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if t.next != nil {
		return t.next.TraceQueryStart(ctx, c, d)
	}
	return ctx
}

func (t commitTracer) TraceQueryEnd(ctx context.Context, c *pgx.Conn, d pgx.TraceQueryEndData) {
	data := c.PgConn().CustomData()
	if n, ok := data[syncRepKey].(*pgconn.Notice); ok {
		delete(data, syncRepKey)
		if w, ok := ctx.Value(watchKey{}).(*commitWatch); ok {
			w.unreplicated.Store(n)
		}
	}
	if t.next != nil {
		t.next.TraceQueryEnd(ctx, c, d)
	}
}

// confirm judges an attempt's result by the call's watch: a success that
// follows a commit not confirmed replicated holds only once a
// replication barrier passes; otherwise it is *AmbiguousCommitError.
// An ambiguous error caused by an unreplicated batch commit (a group
// commit's member) marks the call too, for its settling attempt.
func (s *Store) confirm(ctx context.Context, w *commitWatch, err error) error {
	if err != nil {
		// (The target is declared here: it escapes, an allocation per
		// attempt if declared above for the success path too.)
		var unrep *UnreplicatedCommitError
		if errors.As(err, &unrep) && w.unreplicated.Load() == nil {
			w.unreplicated.Store(&pgconn.Notice{Message: unrep.Notice})
		}
		return err
	}
	n := w.unreplicated.Load()
	if n == nil {
		return nil
	}
	if err := s.barrier(ctx); err != nil {
		s.log.WarnContext(ctx, "commit not confirmed by the synchronous standby", "err", err)
		return &store.AmbiguousCommitError{Err: fmt.Errorf("%w (barrier: %v)", &UnreplicatedCommitError{Notice: n.Message}, err)}
	}
	w.unreplicated.Store(nil)
	return nil
}

// barrierSQL is the replication barrier's write: a new version of the
// one shard_config row, with the same values. It must write WAL: a
// transaction that only took a transaction id (txid_current) commits
// without waiting for the standby.
const barrierSQL = `UPDATE shard_config SET shards = shards WHERE id = 1`

// errNoBarrier means the barrier found no row to write (the store is not
// bootstrapped), so it proved nothing.
var errNoBarrier = errors.New("sqlstore: replication barrier: shard_config has no row")

// barrier commits a write transaction of its own and reports whether the
// synchronous standby confirmed it (see the comment at the top).
func (s *Store) barrier(ctx context.Context) error {
	// A watch of its own: the call's already holds the earlier warning.
	w := &commitWatch{}
	bctx := context.WithValue(ctx, watchKey{}, w)
	tag, err := s.pool.Exec(bctx, barrierSQL)
	if err != nil {
		return err
	}
	if tag.RowsAffected() != 1 {
		return errNoBarrier
	}
	if n := w.unreplicated.Load(); n != nil {
		return &UnreplicatedCommitError{Notice: n.Message}
	}
	return nil
}

// batchReplicated judges a group commit's batch whose COMMIT drew the
// sync-rep warning: nil once a barrier passes, else the warning as the
// batch's error, which every member settles as its own ambiguous commit.
func (s *Store) batchReplicated(ctx context.Context, w *commitWatch) error {
	n := w.unreplicated.Load()
	if err := s.barrier(ctx); err != nil {
		return &UnreplicatedCommitError{Notice: n.Message}
	}
	return nil
}

// markUnreplicated records on ctx's call that err, a batch's answer, is
// a commit the standby did not confirm: the member's settle (a re-read
// in the same attempt) then holds only after a barrier (confirm).
func markUnreplicated(ctx context.Context, err error) {
	var unrep *UnreplicatedCommitError
	if w, ok := ctx.Value(watchKey{}).(*commitWatch); ok && errors.As(err, &unrep) {
		w.unreplicated.Store(&pgconn.Notice{Message: unrep.Notice})
	}
}
