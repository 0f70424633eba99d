package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/drillpoint"
	"github.com/idemcoord/idemcoord/store"
)

// updateSQL is the shape of every write after the claim: lock the shard's
// fence, and update the record only if its version is the one the writer
// holds, its lease owner is the writer, and the fence's epoch and owner
// region are the writer's (an unowned shard admits nobody). The fence's
// conditions filter its locked scan, so the join is with one row or none.
// {set} and {cond} are filled per operation; {now} is the statement's time.
// Parameters $1..$9 are fixed; operations add $10 on.
const updateSQL = `UPDATE idempotency_records SET version = version + 1, updated_at = {now}, epoch = $3, {set}
FROM (SELECT 1 FROM shard_fences WHERE shard = $2 AND epoch = $3 AND owner_region = $9 AND owner_region <> ''
	FOR SHARE) AS f
WHERE shard = $2 AND actor_scope = $4 AND endpoint = $5 AND key_hash = $6 AND version = $7 AND lease_owner = $8
	AND {cond}
RETURNING version, lease_expires_at, expires_at + CASE WHEN compacted THEN 0 ELSE marker_ttl_ms END * INTERVAL '1 millisecond'`

// fixedArgs is the number of updateSQL's fixed parameters ($1..$9).
const fixedArgs = 9

// fencedUpdate is one prepared fenced update: updateSQL's fixed
// parameters as the lease held them when prepared, and the operation's
// own (extra, $10 on). The fixed ones are kept typed and boxed into the
// statement's arguments only when it runs alone (args): a finish that goes
// in a group-commit batch is read from them directly (finishBatchArgs),
// which spared a first run seven allocations.
type fencedUpdate struct {
	l     *store.Lease
	owner string // lease owner after the update
	op    string
	sql   string
	// The fixed parameters: $1 the statement's time (nil: the
	// database's), $2 shard, $3 epoch, $4 actor, $5 endpoint, $6 key hash,
	// $7 version (the version the update is conditioned on: the lease's,
	// or one adopted by settle), $8 lease owner, $9 region.
	at                 *time.Time
	shard              int
	epoch, version     int64
	actor, endpoint    string
	keyHash            [32]byte
	leaseOwner, region string
	extra              []any
	// fin, when finish is set, holds a finish's own parameters
	// (finishSet's, $10 on) typed, in place of extra: boxed only when
	// the update runs alone (args), read as they are by a batch
	// (finishBatchArgs). Boxing them for every finish, batched or not,
	// cost a first run about seven allocations.
	fin    finishVals
	finish bool
	// self is set for the lease holder's own writes (heartbeat, stage,
	// finish): they keep the owner and require a running state, so a
	// record still running under this lease's owner moved only by this
	// lease's earlier writes.
	self bool
}

func (s *Store) prepareUpdate(l *store.Lease, owner, op, set, cond string, extra ...any) fencedUpdate {
	return s.prepareText(l, owner, op, updateText(set, cond), extra...)
}

// prepareText is prepareUpdate with updateSQL already filled in (q).
func (s *Store) prepareText(l *store.Lease, owner, op, q string, extra ...any) fencedUpdate {
	return fencedUpdate{l: l, owner: owner, op: op, sql: q, at: s.now(), shard: l.Token.Shard, epoch: l.Token.Epoch,
		version: l.Version, actor: l.Scope.Actor, endpoint: l.Scope.Endpoint, keyHash: l.KeyHash,
		leaseOwner: l.Owner, region: l.Token.Region, extra: extra}
}

// updateTexts caches updateSQL filled per (set, cond): every caller passes
// constants, so the text is built once per kind of update, not on every
// call (a first run's finish spent about 12 µs rebuilding it).
var updateTexts sync.Map // [2]string{set, cond} -> string

// updateText returns updateSQL with {set}, {cond} and {now} filled in.
func updateText(set, cond string) string {
	k := [2]string{set, cond}
	if q, ok := updateTexts.Load(k); ok {
		return q.(string)
	}
	q := strings.NewReplacer("{set}", set, "{cond}", cond).Replace(updateSQL)
	q = strings.ReplaceAll(q, "{now}", "COALESCE($1::TIMESTAMPTZ, now())")
	updateTexts.Store(k, q)
	return q
}

// ownCond is the condition of the lease holder's own writes: the record
// still running.
const ownCond = `state IN ('PENDING', 'IN_PROGRESS')`

// otherSet is finishSet for a writer that holds no lease (a cancel, a
// resolve, an operator's reconcile): it also gives the record that
// writer's own identity ($18, writerID) as its lease_owner. A lease's
// owner is a nonce unique to its claim or takeover, and these writers
// keep the version's step of one, so without it their change (version+1,
// the owner kept) would be exactly what settle reads as a lost write of
// the lease's own that applied: a cancelled operation's worker would be
// told its stage or finish was recorded and go on. A worker's write
// conditioned on its owner never matches a record another writer changed.
const otherSet = finishSet + `, lease_owner = $18`

// writerID is a fresh identity for one write of a writer without a lease
// (op names it: "cancel", "resolve", "reconcile"): unique, so settle tells
// this write from any other, and never a lease's (a worker's owner is
// "worker/nonce", and no worker is named after these).
func writerID(op string) string { return op + "/" + nonce() }

// The lease holder's own writes, filled in once: a first run's finish
// looked its text up in updateTexts by the whole set and condition (a
// hash and a compare of some 700 bytes, and an allocation) on every call.
var (
	heartbeatSQL = updateText(heartbeatSet, ownCond)
	stageSQL     = updateText(stageSet, ownCond)
	finishSQL    = updateText(finishSet, ownCond)
	// finishStageSQL is a finish that also records the result's recovery
	// point ($18, store.Result.Stage): rare (a retryable failure on an
	// endpoint whose retries complete the intent), so it is not batched.
	finishStageSQL = updateText(finishSet+`, last_stage = $18`, ownCond)
)

// prepareOwn prepares one of the lease holder's own writes (q is one of
// heartbeatSQL, stageSQL, finishSQL); see fencedUpdate.self.
func (s *Store) prepareOwn(l *store.Lease, op, q string, extra ...any) fencedUpdate {
	u := s.prepareText(l, l.Owner, op, q, extra...)
	u.self = true
	return u
}

// run executes the update on q (a pool or a transaction). ok=false means
// no row matched. On success the lease follows the row.
func (u *fencedUpdate) run(ctx context.Context, s *Store, q querier) (ok bool, err error) {
	// The answer's destinations escape into the scan: one allocation
	// for the three.
	out := new(struct {
		version  int64
		leaseExp *time.Time
		expires  time.Time
	})
	rows, err := q.Query(ctx, u.sql, u.args()...)
	if err == nil {
		// QueryRow's Scan, reading the answer's binary form (rawscan.go).
		if !rows.Next() {
			err = pgx.ErrNoRows
		} else {
			err = scanUpdated(rows, 0, &out.version, &out.leaseExp, &out.expires)
		}
		rows.Close()
		if rerr := rows.Err(); rerr != nil {
			err = rerr
		}
	}
	if errors.Is(err, pgx.ErrNoRows) {
		// No row: the fence refused, or the record moved on.
		if err := s.checkFence(ctx, q, u.l.Token); err != nil {
			if errors.Is(err, fencing.ErrStaleEpoch) {
				s.metrics.fenced(ctx, u.op)
			}
			return false, err
		}
		return false, nil
	}
	if err != nil {
		return false, err
	}
	u.l.Version, u.l.Owner, u.l.ExpiresAt, u.l.RecordExpiresAt = out.version, u.owner, time.Time{}, out.expires
	if out.leaseExp != nil {
		u.l.ExpiresAt = *out.leaseExp
	}
	return true, nil
}

// update runs one fenced, version-conditioned update for lease l as its own
// transaction. It reports ok=false when no row matched (someone else moved
// the record on). A lost connection is resolved by re-reading the record:
// the update happened iff the row now carries version+1 and owner.
//
// It returns *fencing.StaleEpochError when the shard's epoch is not l's,
// and *AmbiguousCommitError when the outcome stayed unknown.
func (s *Store) update(ctx context.Context, l *store.Lease, owner, op, set, cond string, extra ...any) (bool, error) {
	return s.runUpdate(ctx, s.prepareUpdate(l, owner, op, set, cond, extra...))
}

// runUpdate runs a prepared update as its own transaction; see update.
//
// A lease holder's own write (u.self) that matches no row re-reads the
// record before it concludes anything: a record still running whose
// lease_owner is still this lease's owner (a nonce unique to one claim or
// takeover) was moved only by this lease's own earlier writes, such as a
// heartbeat that committed while its answer and the re-read after it were
// lost. The update adopts that version and runs again, instead of
// reporting a lost ownership that never happened.
func (s *Store) runUpdate(ctx context.Context, u fencedUpdate) (bool, error) {
	return s.runUpdateVia(ctx, u, nil)
}

// runUpdateVia is runUpdate whose first attempt runs first instead of
// u.run (the finish's group commit, finishbatch.go). first answers as
// u.run does, so its outcome is judged the same way: an ambiguous one is
// settled by re-reading (the update applied iff the row carries version+1
// and u's owner), never re-run blind.
func (s *Store) runUpdateVia(ctx context.Context, u fencedUpdate, first func(context.Context, *fencedUpdate) (bool, error)) (bool, error) {
	ctx, call := s.start(ctx)
	defer call.End()
	l, op := u.l, u.op
	unsure := false // an earlier attempt's outcome was not seen
	var (
		ok      bool
		lastAmb error
	)
	err := s.do(ctx, op, updateAgain, func(ctx context.Context) error {
		var err error
		if first != nil {
			ok, err = first(ctx, &u)
			first = nil
		} else {
			ok, err = u.run(ctx, s, s.pool)
		}
		err = stmtOutcome(err)
		isAmb := err != nil && errors.As(err, new(*store.AmbiguousCommitError))
		switch {
		case err != nil && !isAmb:
			return fmt.Errorf("sqlstore: %s: %w", op, err)
		case ok:
			return nil
		case !isAmb && !unsure && !u.self:
			return nil // the record moved on: someone else's write
		}
		if isAmb {
			s.log.WarnContext(ctx, "update outcome ambiguous, re-reading", "op", op, "operation_id", l.OperationID, "err", err)
			unsure, lastAmb = true, err
		}
		ok, err = s.settle(ctx, &u, unsure, err)
		return err
	})
	if err == nil {
		return ok, nil // before the target below, which escapes: no allocation on success
	}
	var exhausted *store.RetriesExhaustedError
	switch {
	case errors.As(err, &exhausted) && errors.Is(exhausted.Err, errAdopted) && lastAmb != nil:
		return false, &stillAmbiguous{op: op, attempts: exhausted.Attempts, err: lastAmb}
	case errors.As(err, &exhausted) && errors.Is(exhausted.Err, errAdopted):
		return false, nil // adopted versions kept moving: not ours after all
	}
	return false, err
}

// errAdopted means an update adopted its own earlier write's version and
// runs again.
var errAdopted = errors.New("sqlstore: the lease adopted its own earlier write")

// updateAgain is what runs an update again: a serialization failure, an
// ambiguous commit that the re-read showed was not applied (the re-run is
// then safe), or an adopted version.
func updateAgain(err error) bool {
	if errors.As(err, new(final)) {
		return false
	}
	return retryable(err) || errors.Is(err, errAdopted) || errors.As(err, new(*store.AmbiguousCommitError))
}

// settle is the one answer to an update whose outcome was not seen (amb is
// its *AmbiguousCommitError) or that matched no row although the lease
// wrote it (u.self) or an earlier outcome was not seen (unsure): never run
// it again blind; read the record and decide. The update happened iff the
// row now carries version+1 and u's owner: every writer leaves its own
// owner (a lease's nonce, or a writer without a lease its writerID, see
// otherSet), so another writer's change is never taken for u's. It
// returns applied, or amb to
// run the update again (it provably did not apply), or errAdopted (still
// this lease's: the update runs again at the version read), or neither
// (someone else's write: not ours).
func (s *Store) settle(ctx context.Context, u *fencedUpdate, unsure bool, amb error) (applied bool, err error) {
	l, owner, op := u.l, u.owner, u.op
	rec, rerr := s.readShard(ctx, l.Token.Shard, l.Scope.Actor, l.Scope.Endpoint, l.KeyHash)
	if errors.Is(rerr, store.ErrNotFound) && amb == nil {
		return false, nil // finished and cleaned up long ago: not ours
	}
	if rerr != nil {
		if amb != nil {
			return false, final{fmt.Errorf("sqlstore: %s: %w (re-read failed: %v)", op, amb, rerr)}
		}
		return false, final{fmt.Errorf("sqlstore: %s: no row matched and the re-read failed: %w", op, giveUp(rerr))}
	}
	switch {
	case u.self && rec.LeaseOwner == l.Owner && running(rec.State) && rec.Version > l.Version:
		// Still this lease's: adopt our own earlier write and go on.
		s.log.InfoContext(ctx, "lease adopted its own unacknowledged write", "op", op,
			"operation_id", l.OperationID, "from_version", l.Version, "to_version", rec.Version)
		l.Version, l.ExpiresAt = rec.Version, rec.LeaseExpiresAt
		u.version = rec.Version
		return false, errAdopted
	case unsure && rec.Version == l.Version+1 && rec.LeaseOwner == owner:
		// Applied: now (an ambiguous commit) or while its re-run waited.
		l.Version, l.Owner, l.ExpiresAt = rec.Version, owner, rec.LeaseExpiresAt
		return true, nil
	case rec.Version != l.Version || amb == nil:
		return false, nil
	}
	return false, amb // not applied: run it again
}

// final ends the update's loop with err, which updateAgain would otherwise
// run again: a re-read that failed leaves an ambiguous outcome unknown, and
// it must not be re-run blind. It still matches what err matches.
type final struct{ err error }

func (e final) Error() string { return e.err.Error() }
func (e final) Unwrap() error { return e.err }

// owned turns update's ok=false into ErrLostOwnership.
func (s *Store) owned(ctx context.Context, l *store.Lease, op string, ok bool, err error) error {
	if err == nil && !ok {
		s.metrics.lostOwnership(ctx, op)
		return fmt.Errorf("%w: operation %s at version %d", store.ErrLostOwnership, l.OperationID, l.Version)
	}
	return err
}

// heartbeatSet extends the lease by $10 milliseconds from now.
const heartbeatSet = `lease_expires_at = {now} + $10::INT8 * INTERVAL '1 millisecond'`

// stageSet records the stage $10 (and moves a PENDING record to
// IN_PROGRESS).
const stageSet = `last_stage = $10, state = 'IN_PROGRESS'`

// Heartbeat extends the lease by its full length from now. It returns
// ErrLostOwnership if the operation was taken over.
func (s *Store) Heartbeat(ctx context.Context, l *store.Lease) error {
	ok, err := s.runUpdate(ctx, s.prepareOwn(l, "heartbeat", heartbeatSQL, l.Length.Milliseconds()))
	return s.owned(ctx, l, "heartbeat", ok, err)
}

// RecordStage records a recovery point: a takeover sees it in
// Lease.LastStage and resumes from there instead of repeating what is
// done. Record a stage before an external call whose effect a takeover must
// look for ("charge_sent"), and after the call's answer.
func (s *Store) RecordStage(ctx context.Context, l *store.Lease, stage string) error {
	ok, err := s.runUpdate(ctx, s.prepareOwn(l, "stage", stageSQL, stage))
	if err == nil && ok {
		l.LastStage = stage
	}
	return s.owned(ctx, l, "stage", ok, err)
}

// finishSet stores a result; parameters $10..$17. The record then lives
// at least TTL ($17, milliseconds) from now: a result recorded late (an
// unknown outcome resolved after the claim's TTL) must not be cleaned up
// before the retries it answers. A record purged while its operation ran
// or was unknown stays purged: the state and status are recorded, the
// body, headers and error summary are not (the SET reads the row as it was
// before this update).
const finishSet = `state = $10, lease_expires_at = NULL,
	response_status = $11,
	response_headers = CASE WHEN purged THEN NULL ELSE $12::JSONB END,
	response_body = CASE WHEN purged THEN NULL ELSE $13::BYTEA END,
	body_omitted = CASE WHEN purged THEN false ELSE $14::BOOL END,
	resource_id = $15, error_summary = CASE WHEN purged THEN NULL ELSE $16::TEXT END,
	expires_at = GREATEST(expires_at, {now} + $17::INT8 * INTERVAL '1 millisecond')`

// Finish records the operation's result: COMPLETED or TERMINAL_FAILURE with
// the response snapshot (replayed from then on), RETRYABLE_FAILURE (the
// next retry runs it again), or OUTCOME_UNKNOWN (held until resolved),
// and res.Stage, when set, as the last stage in the same write. It
// returns ErrLostOwnership when the operation was taken over: the caller's
// result is then not the operation's answer.
func (s *Store) Finish(ctx context.Context, l *store.Lease, res store.Result) error {
	if err := idempotency.Transition(idempotency.InProgress, res.State); err != nil || res.State == idempotency.InProgress {
		return fmt.Errorf("sqlstore: finish: %w", errors.Join(err, errors.New("state must be a result")))
	}
	drillpoint.Hit(drillpoint.BeforeFinish)
	u := s.prepareFinish(l, res)
	var first func(context.Context, *fencedUpdate) (bool, error)
	if res.Stage == "" && s.finishes != nil {
		first = s.finishFirst
	}
	ok, err := s.runUpdateVia(ctx, u, first)
	if err == nil && ok && res.Stage != "" {
		l.LastStage = res.Stage
	}
	if err == nil && ok {
		// The finish committed and its reply is here: a drill may die now,
		// the result recorded and nobody told.
		drillpoint.Hit(drillpoint.DuringCommit)
	}
	if err = s.owned(ctx, l, "finish", ok, err); err != nil {
		return err
	}
	if res.State == idempotency.OutcomeUnknown {
		s.metrics.outcome(ctx, l.Scope.Endpoint, "outcome_unknown_recorded")
	}
	return nil
}

// Read returns the record of a scope, for the actor of the scope only.
func (s *Store) Read(ctx context.Context, sc store.Scope) (store.Record, error) {
	ctx, done := s.call(ctx) // a deadline for every statement: a frozen primary keeps its connections open
	defer done()
	rec, err := s.readHash(ctx, sc.Actor, sc.Endpoint, sc.Key.Hash())
	rec.Scope.Key = sc.Key
	return rec, err
}

// readShard reads a record by its full CockroachDB primary key (shard
// first): the re-read after an ambiguous update.
func (s *Store) readShard(ctx context.Context, shard int, actor, endpoint string, keyHash [32]byte) (store.Record, error) {
	var rec store.Record
	err := scanRecord(s.pool.QueryRow(ctx, `SELECT `+recordCols+` FROM idempotency_records
		WHERE shard = $1 AND actor_scope = $2 AND endpoint = $3 AND key_hash = $4`, shard, actor, endpoint, keyHash[:]), &rec)
	if errors.Is(err, pgx.ErrNoRows) {
		return rec, store.ErrNotFound
	}
	return rec, err
}

// readHash reads a record without its shard (the store does not know the
// shard count): for Read, an operator and test path, never a request's.
func (s *Store) readHash(ctx context.Context, actor, endpoint string, keyHash [32]byte) (store.Record, error) {
	var rec store.Record
	err := scanRecord(s.pool.QueryRow(ctx, `SELECT `+recordCols+` FROM idempotency_records
		WHERE actor_scope = $1 AND endpoint = $2 AND key_hash = $3`, actor, endpoint, keyHash[:]), &rec)
	if errors.Is(err, pgx.ErrNoRows) {
		return rec, store.ErrNotFound
	}
	return rec, err
}

// running reports whether a worker may be executing the operation.
func running(st idempotency.State) bool {
	return st == idempotency.Pending || st == idempotency.InProgress
}
