package sqlstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/retry"
	"github.com/idemcoord/idemcoord/store"
)

// Releasing a claim whose commit was lost. Begin settles an ambiguous
// claim by claiming again and recognising its own insert by lease_owner;
// when that settling fails too (the store stalled and stays unreachable
// for the rest of the call's budget), Begin gives up with an error and the
// caller sends nothing. The claim may have committed all the same: an
// IN_PROGRESS record at version 1 under a lease owner nobody holds, which
// answers every retry "in progress" until its lease ends; or, for an async
// claim, a PENDING one that answers every retry 202 for an operation
// nothing runs (recovery only takes over claims with a stored request, and
// the caller stored none).
//
// So the store remembers such a claim (its scope, token, operation id and
// lease owner; never more than maxPendingReleases at once) and, in the
// background, as soon as the store answers again, releases it: a fenced
// write conditioned on the record still being exactly that claim (version
// 1, the same lease owner, running) that records RETRYABLE_FAILURE "not
// sent", as the gateway does for a claim it could not use. The next retry
// takes it over at once. A record another worker took over, or that moved
// on in any way, or a claim that never committed, matches nothing and is
// left alone. It tries for at most the claim's lease length: past it a
// retry takes the claim over anyway.

// maxPendingReleases bounds the claims remembered for release; a claim
// over the bound is dropped (logged, counted as "dropped"): its retries
// wait out its lease, as they did before.
const maxPendingReleases = 1024

// releaseSummary is the error summary a released claim records.
const releaseSummary = "not sent: the claim's commit could not be confirmed"

// Backoff between release rounds while the store does not answer.
const (
	releaseFirstWait = 50 * time.Millisecond
	releaseMaxWait   = 2 * time.Second
)

// Release results, the result label of idemcoord.claim_releases.
const (
	releaseReleased = "released" // the claim was released
	releaseLeft     = "left"     // the record was not that claim (never committed, taken over, moved on)
	releaseExpired  = "expired"  // the store did not answer within the claim's lease
	releaseDropped  = "dropped"  // over maxPendingReleases, or the store closed
)

// pendingRelease is one claim to release.
type pendingRelease struct {
	lease    store.Lease
	summary  string    // the error summary the release records
	deadline time.Time // on the backoff clock
}

// releaser holds the claims to release and runs at most one goroutine
// that releases them.
type releaser struct {
	mu      sync.Mutex
	pending []*pendingRelease
	running bool
	closed  bool
	stop    chan struct{}
	wg      sync.WaitGroup
	counter metric.Int64Counter
}

// newReleaseCounter creates idemcoord.claim_releases, exported at zero.
func newReleaseCounter(m metric.Meter) (metric.Int64Counter, error) {
	c, err := m.Int64Counter("idemcoord.claim_releases",
		metric.WithDescription("Claims whose commit could not be confirmed (Begin gave up, nothing sent), by result: released (recorded as RETRYABLE_FAILURE once the store answered), left (the record was not that claim: never committed, taken over or moved on), expired (the store did not answer within the lease), dropped (too many pending, or the store closed)."))
	if err != nil {
		return nil, err
	}
	for _, r := range []string{releaseReleased, releaseLeft, releaseExpired, releaseDropped} {
		c.Add(context.Background(), 0, metric.WithAttributes(attribute.String("result", r)))
	}
	return c, nil
}

// rememberRelease queues the claim that Begin gave up on after an
// ambiguous commit (owner, opID as it inserted them) for release.
func (s *Store) rememberRelease(ctx context.Context, req store.ClaimRequest, owner string, opID uuid.UUID) {
	l := store.Lease{Scope: req.Scope, KeyHash: req.Scope.Key.Hash(), OperationID: opID, Owner: owner, Version: 1,
		Token: req.Token, Length: req.Lease, TTL: snapshotTTL(req)}
	if s.queueRelease(ctx, &pendingRelease{lease: l, summary: releaseSummary,
		deadline: s.cfg.BackoffClock.Now().Add(req.Lease)}) {
		s.log.WarnContext(ctx, "claim outcome unknown after giving up: releasing it once the store answers",
			"operation_id", opID, "endpoint", req.Scope.Endpoint)
	}
}

// Release gives up l's run, which sent nothing upstream: RETRYABLE_FAILURE
// with summary, through the lease (a fenced write conditioned on the
// lease's version and owner and on the record still running), so the
// next retry runs at once. The write is the lease's own, so one of the
// lease's earlier writes that committed unseen (a "sending" mark whose
// answer was lost) is adopted, not mistaken for a takeover, and the mark
// goes with the release. When the store does not answer, the release is
// kept and made in the background as soon as it does (as for a claim
// Begin gave up on, with the same bound and metric), and Release returns
// the store's error.
//
// The kept release is tried past the lease too, until the record's TTL:
// a mark left past the lease makes a takeover record OUTCOME_UNKNOWN for
// a request never sent, and a release that comes after a takeover
// matches nothing and is left.
func (s *Store) Release(ctx context.Context, l *store.Lease, summary string) error {
	ok, err := s.release(ctx, l, summary)
	if err != nil && (errors.Is(err, store.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil) {
		if s.queueRelease(ctx, &pendingRelease{lease: *l, summary: summary,
			deadline: s.cfg.BackoffClock.Now().Add(l.Length + l.TTL)}) {
			s.log.WarnContext(ctx, "release not confirmed: releasing it once the store answers",
				"operation_id", l.OperationID, "endpoint", l.Scope.Endpoint)
		}
	}
	return s.owned(ctx, l, "release", ok, err)
}

// release records l's run as RETRYABLE_FAILURE with summary, through the
// lease (runUpdate: ok=false when the record moved on).
func (s *Store) release(ctx context.Context, l *store.Lease, summary string) (bool, error) {
	status, headers, body, resourceID, errSummary, err := snapshotArgs(store.Result{State: idempotency.RetryableFailure,
		ErrorSummary: summary})
	if err != nil {
		return false, err
	}
	return s.runUpdate(ctx, s.prepareOwn(l, "release", finishSQL, string(idempotency.RetryableFailure), status, headers,
		body, false, resourceID, errSummary, l.TTL.Milliseconds()))
}

// queueRelease keeps p for the release loop, and starts it when it is not
// running. It reports false (p counted and logged as dropped) when the
// store closed or maxPendingReleases are kept already.
func (s *Store) queueRelease(ctx context.Context, p *pendingRelease) bool {
	r := &s.releases
	r.mu.Lock()
	if r.closed || len(r.pending) >= maxPendingReleases {
		r.mu.Unlock()
		s.releaseDone(ctx, &p.lease, releaseDropped, nil)
		return false
	}
	r.pending = append(r.pending, p)
	start := !r.running
	r.running = true
	if start {
		r.wg.Add(1)
	}
	r.mu.Unlock()
	if start {
		go s.releaseLoop()
	}
	return true
}

// releaseLoop releases the pending claims, round after round, until none
// is left or the store closes. A round stops at the first claim the store
// could not answer for, and the next waits (doubling up to releaseMaxWait).
func (s *Store) releaseLoop() {
	r := &s.releases
	defer r.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-r.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	backoff := retry.Backoff{Min: releaseFirstWait, Max: releaseMaxWait, Clock: s.cfg.BackoffClock}
	for {
		r.mu.Lock()
		batch := append([]*pendingRelease(nil), r.pending...)
		r.mu.Unlock()
		answered := true
		for _, p := range batch {
			if ctx.Err() != nil {
				break
			}
			if !s.releaseOne(ctx, p) {
				answered = false
				break
			}
			r.remove(p)
		}
		r.mu.Lock()
		if len(r.pending) == 0 || r.closed {
			r.running = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		if answered {
			backoff.Reset()
			continue
		}
		backoff.Wait(ctx)
	}
}

// releaseOne tries to release p once. It reports whether p is settled
// (released, left alone, or out of time); false means the store did not
// answer and p stays pending.
func (s *Store) releaseOne(ctx context.Context, p *pendingRelease) bool {
	l := p.lease // a copy: the update moves it
	if !s.cfg.BackoffClock.Now().Before(p.deadline) {
		s.releaseDone(ctx, &l, releaseExpired, nil)
		return true
	}
	cctx, done := context.WithTimeout(ctx, releaseMaxWait+l.Length/4)
	defer done()
	ok, err := s.release(cctx, &l, p.summary)
	switch {
	case err != nil && (errors.Is(err, store.ErrUnavailable) || cctx.Err() != nil):
		return false // the store still does not answer (or its answer was lost; or it closes): try again
	case err != nil:
		s.releaseDone(ctx, &l, releaseDropped, err)
	case ok:
		s.releaseDone(ctx, &l, releaseReleased, nil)
	default:
		s.releaseDone(ctx, &l, releaseLeft, nil)
	}
	return true
}

// releaseDone counts and logs the end of a pending release.
func (s *Store) releaseDone(ctx context.Context, l *store.Lease, result string, err error) {
	s.releases.counter.Add(ctx, 1, metric.WithAttributes(attribute.String("result", result)))
	args := []any{"operation_id", l.OperationID, "endpoint", l.Scope.Endpoint, "result", result}
	if err != nil {
		args = append(args, "err", err)
	}
	msg := map[string]string{
		releaseReleased: "unconfirmed claim released: recorded as not sent, the next retry runs it",
		releaseLeft:     "unconfirmed claim left alone: the record is not that claim (never committed, taken over or moved on)",
		releaseExpired:  "unconfirmed claim not released within its lease: a retry takes it over",
		releaseDropped:  "unconfirmed claim not released: its retries wait out its lease",
	}[result]
	if result == releaseReleased || result == releaseLeft {
		s.log.InfoContext(ctx, msg, args...)
		return
	}
	s.log.WarnContext(ctx, msg, args...)
}

// remove drops p from the pending claims.
func (r *releaser) remove(p *pendingRelease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, q := range r.pending {
		if q == p {
			r.pending = append(r.pending[:i], r.pending[i+1:]...)
			return
		}
	}
}

// closeReleases stops the releases and waits for the goroutine: the claims still
// pending are dropped (their retries wait out their leases).
func (s *Store) closeReleases() {
	r := &s.releases
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	close(r.stop)
	left := r.pending
	r.pending = nil
	r.mu.Unlock()
	r.wg.Wait()
	for _, p := range left {
		s.releaseDone(context.Background(), &p.lease, releaseDropped, errors.New("store closed"))
	}
}
