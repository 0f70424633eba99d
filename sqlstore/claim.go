package sqlstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/downstream"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// readSQL reads a key's record and the decision time: the read-first path.
// Every query on records names shard first, the head of CockroachDB's
// primary key (see migrations/cockroach), so it is a local point lookup.
const readSQL = `SELECT COALESCE($1::TIMESTAMPTZ, now()), ` + recordCols + ` FROM idempotency_records
	WHERE shard = $5 AND actor_scope = $2 AND endpoint = $3 AND key_hash = $4`

// Begin claims a key, or reports why the caller may not run it: one
// statement that reads the key's record and, only if there is none, locks
// the shard's fence and inserts the claim. It never selects and then
// inserts in separate transactions. Under load that statement is shared
// with other claims (Config.GroupCommit), each row decided on its own.
//
// Begin returns *fencing.StaleEpochError when the token's epoch is not the
// shard's. A connection lost during the claim is resolved inside Begin by
// re-running the claim and recognising its own insert.
func (s *Store) Begin(ctx context.Context, req store.ClaimRequest) (store.Claim, error) {
	c, err := s.begin(ctx, req)
	if err == nil {
		s.metrics.outcome(ctx, req.Scope.Endpoint, c.Outcome.String())
		if c.Outcome == store.WindowPassed {
			s.windowPassed(ctx, req.Scope.Endpoint, windowClaim)
		}
	} else if errors.Is(err, fencing.ErrStaleEpoch) {
		s.metrics.fenced(ctx, "claim")
	}
	return c, err
}

func (s *Store) begin(ctx context.Context, req store.ClaimRequest) (store.Claim, error) {
	ctx, call := s.start(ctx)
	defer call.End()
	owner := ownerID(req.Worker)
	opID := newOperationID(s.cockroach)
	state := idempotency.InProgress
	if req.Pending {
		state = idempotency.Pending
	}
	var c store.Claim
	first, unsure := true, false
	err := s.do(ctx, "claim", claimAgain, func(ctx context.Context) (err error) {
		// While most requests on this endpoint are retries, a plain point
		// read answers them in one cheap round trip; a miss falls through
		// to the claim, which alone arbitrates.
		readFirst := first && s.retries.readFirst(req.Scope.Endpoint)
		first = false
		c, err = s.claimOnce(ctx, req, owner, opID, state, readFirst, &unsure)
		return err
	})
	if err != nil {
		// (Only on failure: the target escapes, an allocation per call.)
		var exhausted *store.RetriesExhaustedError
		if errors.As(err, &exhausted) && errors.Is(exhausted.Err, errMovedOn) {
			exhausted.Err = nil // no failure: the record kept changing under the claim
		}
		if errors.As(err, new(*UnreplicatedCommitError)) {
			unsure = true // our claim may stand on the primary alone
		}
		if unsure {
			// Our insert may have committed, unknown to everyone: release
			// it once the store answers (release.go). A PENDING claim too:
			// recovery only runs claims with a stored request, and nobody
			// stored one for a claim its caller never saw.
			s.rememberRelease(ctx, req, owner, opID)
		}
	}
	return c, err
}

// errMovedOn means a claim round found the record changed under it (a
// racer won the takeover, or a racer's insert is not visible yet): the
// claim runs again.
var errMovedOn = errors.New("sqlstore: the record moved on under the claim")

// claimAgain is what runs a claim round again: a serialization failure,
// a record that moved on, or an ambiguous commit, which the re-run settles
// by recognising its own insert by its owner.
func claimAgain(err error) bool {
	return retryable(err) || errors.Is(err, errMovedOn) || errors.As(err, new(*store.AmbiguousCommitError))
}

// claimOnce is one round of Begin: read (when readFirst), claim, and
// decide on a record found. It sets *unsure when the claim's own insert
// may have committed without an answer (an ambiguous claim statement).
func (s *Store) claimOnce(ctx context.Context, req store.ClaimRequest, owner string, opID uuid.UUID,
	state idempotency.State, readFirst bool, unsure *bool) (store.Claim, error) {
	// The record and the time escape into the statement's scan: one
	// allocation for both, not one each.
	var (
		out = new(struct {
			rec store.Record
			now time.Time
		})
		rec, now = &out.rec, &out.now
		found    bool
		err      error
	)
	if readFirst {
		found, err = s.readRow(ctx, req, rec, now)
		if err = stmtOutcome(err); err != nil {
			return store.Claim{}, fmt.Errorf("sqlstore: read: %w", err)
		}
	}
	if !found {
		// One round trip, one serializable transaction: read the record
		// and, only if there is none, claim it.
		found, err = s.claim(ctx, req, owner, opID, state, rec, now)
		err = stmtOutcome(err)
	}
	switch {
	case err != nil && errors.As(err, new(*store.AmbiguousCommitError)):
		s.log.WarnContext(ctx, "claim outcome ambiguous, re-running the claim", "err", err)
		*unsure = true
		return store.Claim{}, err // the re-run recognises our own insert by its owner
	case err != nil:
		return store.Claim{}, fmt.Errorf("sqlstore: claim: %w", err)
	case found && rec.LeaseOwner == owner && rec.Version == 1:
		// Our insert (or our earlier one, whose answer was lost).
		s.retries.observe(req.Scope.Endpoint, false)
		return store.Claim{Outcome: store.FirstRun, Record: *rec, Lease: newLease(*rec, req)}, nil
	case found:
		s.retries.observe(req.Scope.Endpoint, true)
		c, again, err := s.decide(ctx, req, *rec, *now)
		if err == nil && again {
			err = errMovedOn
		}
		return c, err
	}
	// Neither found nor inserted: the fence refused, or a racer's insert
	// committed in between (read it on the next round).
	if err := s.checkFence(ctx, s.pool, req.Token); err != nil {
		return store.Claim{}, err
	}
	return store.Claim{}, errMovedOn
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// readRow reads the key's record with a plain point select.
func (s *Store) readRow(ctx context.Context, req store.ClaimRequest, rec *store.Record, now *time.Time) (bool, error) {
	keyHash := req.Scope.Key.Hash()
	err := scanRecord(s.pool.QueryRow(ctx, readSQL, s.now(), req.Scope.Actor, req.Scope.Endpoint, keyHash[:],
		req.Token.Shard), rec, now)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	rec.Scope.Key = req.Scope.Key
	return err == nil, err
}

// classify answers a claim that found an existing record, without
// writing. takeover means the caller may take the operation over (an
// expired lease or a retryable failure), conditioned on rec's version.
func classify(req store.ClaimRequest, rec store.Record, now time.Time) (c store.Claim, takeover bool, err error) {
	c.Record = rec
	want := req.Fingerprint
	if rec.Fingerprint.Version != want.Version {
		if req.Refingerprint == nil {
			return c, false, fmt.Errorf("%w: version %d", store.ErrFingerprintVersion, rec.Fingerprint.Version)
		}
		if want, err = req.Refingerprint(rec.Fingerprint.Version); err != nil {
			return c, false, fmt.Errorf("%w: version %d: %v", store.ErrFingerprintVersion, rec.Fingerprint.Version, err)
		}
	}
	if !rec.Fingerprint.Equal(want) || !sameFirstSent(rec.FirstSent, req.FirstSent) {
		c.Outcome = store.Mismatch
		return c, false, nil
	}
	switch rec.State {
	case idempotency.Completed, idempotency.TerminalFailure, idempotency.Cancelled:
		c.Outcome = store.Replayed
		return c, false, nil
	case idempotency.OutcomeUnknown:
		c.Outcome = store.Unresolved
		if downstream.Passed(rec.CreatedAt, now, req.DownstreamWindow) {
			// A resolve path's "not run" would re-run it: the provider
			// may have forgotten the key it ran under.
			c.Outcome = store.WindowPassed
		}
		return c, false, nil
	case idempotency.Pending, idempotency.InProgress:
		if rec.LeaseExpiresAt.After(now) && fencedOut(req, rec) {
			c.Fenced = true
		} else if rec.LeaseExpiresAt.After(now) {
			c.Outcome = store.InFlight
			c.RetryAfter = rec.LeaseExpiresAt.Sub(now)
			return c, false, nil
		}
	}
	if downstream.Passed(rec.CreatedAt, now, req.DownstreamWindow) {
		// A takeover would send again (or resume) past the provider's
		// key window: leave it as it is, for an operator.
		c.Outcome, c.Fenced = store.WindowPassed, false
		return c, false, nil
	}
	return c, true, nil
}

// takeover prepares the version-conditioned update that takes rec over
// for a new owner. Run it on the pool (Begin) or inside the caller's
// transaction (RunLocal).
//
// Stages belong to an attempt. The takeover of a crashed attempt (a
// running record whose lease expired) keeps its last stage: that is the
// recovery point the new owner resumes from. The takeover of a
// RETRYABLE_FAILURE clears it: that attempt ended and was recorded as
// having taken no effect, so its stages say nothing about the new one, and
// a stale "sending" would make a later takeover of a new attempt that
// never sent believe it might have. Unless req.KeepStages: an endpoint
// whose retries complete a partly done intent resumes from them (such an
// endpoint has a resolve path, so it records no "sending" mark).
//
// A retryable failure compacted while it waited (compact.go) is whole
// again once taken over: the new attempt's result gets its full-answer
// tier, and the marker tier is at least the caller's (uncompactedExpiry).
func (s *Store) takeover(req store.ClaimRequest, rec store.Record, newOwner string) (*store.Lease, fencedUpdate) {
	lease := newLease(rec, req)
	if rec.State == idempotency.RetryableFailure && !req.KeepStages {
		lease.LastStage = ""
	}
	return lease, s.prepareUpdate(lease, newOwner, "takeover", `state = 'IN_PROGRESS', lease_owner = $10,
		lease_expires_at = {now} + $11::INT8 * INTERVAL '1 millisecond', attempts = attempts + 1,
		last_stage = CASE WHEN state = 'RETRYABLE_FAILURE' AND NOT $14::BOOL THEN '' ELSE last_stage END,
		expires_at = GREATEST(`+uncompactedExpiry+`, {now} + ($11::INT8 + $12::INT8) * INTERVAL '1 millisecond'),
		compacted = false, marker_ttl_ms = GREATEST(marker_ttl_ms, $15::INT8)`,
		`(state = 'RETRYABLE_FAILURE' OR (state IN ('PENDING', 'IN_PROGRESS') AND (lease_expires_at <= {now} OR `+
			fencedCond+`)))`,
		newOwner, req.Lease.Milliseconds(), snapshotTTL(req).Milliseconds(), req.TakeOverFenced, req.KeepStages,
		markerTTL(req).Milliseconds())
}

// decide classifies an existing record and, where allowed, takes it over.
// retry means the record changed under us and the claim should run again.
func (s *Store) decide(ctx context.Context, req store.ClaimRequest, rec store.Record, now time.Time) (c store.Claim, retry bool, err error) {
	c, take, err := classify(req, rec, now)
	if err != nil || !take {
		return c, false, err
	}
	lease, u := s.takeover(req, rec, ownerID(req.Worker))
	ok, err := s.runUpdate(ctx, u)
	if err != nil || !ok {
		return c, !ok && err == nil, err
	}
	lease.Attempts++
	c.Outcome = store.TakenOver
	c.Lease = lease
	s.noteCrossing(ctx, store.EventTransferred, rec, req.Token, "taken over by a retry")
	if c.Fenced {
		s.metrics.outcome(ctx, req.Scope.Endpoint, eventFencedTakeover)
	}
	return c, false, nil
}

func newLease(rec store.Record, req store.ClaimRequest) *store.Lease {
	return &store.Lease{
		Scope:           req.Scope,
		KeyHash:         rec.KeyHash,
		OperationID:     rec.OperationID,
		Owner:           rec.LeaseOwner,
		Version:         rec.Version,
		Token:           req.Token,
		ExpiresAt:       rec.LeaseExpiresAt,
		RecordExpiresAt: rec.ExpiresAt,
		LastStage:       rec.LastStage,
		Attempts:        rec.Attempts,
		Length:          req.Lease,
		TTL:             snapshotTTL(req), // a late result keeps its full answer this long
	}
}

// checkFence returns *fencing.StaleEpochError unless the shard admits the
// token (same epoch, owned by the token's region; see fencing.Token.Admits).
func (s *Store) checkFence(ctx context.Context, q querier, tok fencing.Token) error {
	var (
		epoch int64
		owner string
	)
	err := q.QueryRow(ctx, `SELECT epoch, owner_region FROM shard_fences WHERE shard = $1`, tok.Shard).Scan(&epoch, &owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("sqlstore: shard %d has no fence row: %w", tok.Shard, fencing.ErrStaleEpoch)
	}
	if err != nil {
		return fmt.Errorf("sqlstore: read fence: %w", err)
	}
	if !tok.Admits(epoch, owner) {
		return &fencing.StaleEpochError{Token: tok, Current: epoch, Owner: owner}
	}
	return nil
}

// ownerID is a claim's lease owner: the worker's name, a slash and a
// nonce, unique to the claim or takeover. Built in one allocation (the
// nonce and the concatenation were two of every first run).
func ownerID(worker string) string {
	var b strings.Builder
	b.Grow(len(worker) + 1 + 2*nonceLen)
	b.WriteString(worker)
	b.WriteByte('/')
	var raw [nonceLen]byte
	rand.Read(raw[:])
	var hexed [2 * nonceLen]byte
	hex.Encode(hexed[:], raw[:])
	b.Write(hexed[:])
	return b.String()
}

// nonceLen is a nonce's length in bytes before hex encoding.
const nonceLen = 8

func nonce() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// membersArg is a claim's member digests as a nullable BYTEA argument:
// NULL when there are none.
func membersArg(m []byte) []byte {
	if len(m) == 0 {
		return nil
	}
	return m
}

// firstSentArg is t as a nullable timestamp argument: NULL when zero.
func firstSentArg(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// sameFirstSent reports whether a record's first-sent time and a claim's
// name the same request: equal, or either unknown.
func sameFirstSent(stored, claimed time.Time) bool {
	return stored.IsZero() || claimed.IsZero() || stored.Equal(claimed)
}
