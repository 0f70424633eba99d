// Package retry is the coordinator's one retry loop and the place where
// every retry budget is named.
//
// A budget is spent per call, never per loop: the store's whole-transaction
// retries, the re-runs that settle an ambiguous commit, a claim's rounds and
// the gateway's own rounds around a store call all draw attempts and time
// from one Share that rides in the call's context. Nested loops therefore
// add up to the named budget instead of multiplying it.
package retry

import (
	"context"
	"sync"
	"time"
)

// Budget bounds one kind of call.
type Budget struct {
	// Attempts bounds the attempts of one call: every statement or
	// transaction it runs, again or for the first time, whatever loop runs
	// it, counts once.
	Attempts int
	// Base is the first backoff; each further attempt doubles it up to Cap.
	// The wait is drawn uniformly from [0, step] (full jitter) so racers
	// spread out.
	Base time.Duration
	// Cap caps the backoff step.
	Cap time.Duration
	// Total bounds the time of one call, attempts and backoffs included.
	Total time.Duration
	// Hold bounds how long a call waits out an outage (Loop.Outage): an
	// attempt that failed because no server could take it, which proves
	// nothing was done, spends no attempt and runs again every HoldStep
	// (full jitter) until Hold has passed since the call's first such
	// failure, or Total runs out. Zero: such a failure is an ordinary
	// attempt.
	Hold time.Duration
	// HoldStep is the backoff step while a call waits out an outage.
	HoldStep time.Duration
}

// Budgets names every retry budget of the coordinator.
type Budgets struct {
	// Store bounds one store call (a claim, a finish, a heartbeat, a cancel,
	// a fence move) and each round of gateway calls that shares it: a
	// request's claim rounds, a DELETE's cancel rounds.
	Store Budget
	// Record bounds the gateway's effort to record one result that the
	// store did not take at once: the first Finish and every later one, in
	// the background, share its attempts and its time, and each Finish is
	// also bounded by Store.Total.
	Record Budget
	// Etcd bounds an idempotent etcd step run again after a transient
	// failure (a request timed out, a leader changed, no leader yet):
	// the directory's bootstrap at start, and each read and write of a
	// shard move (ownership.Directory.Move, MoveBatch).
	Etcd Budget
	// Schema bounds one migration step, run again after any failure
	// (instances starting together race on the catalog).
	Schema Budget
}

// Default is every budget's default.
var Default = Budgets{
	Store: Budget{
		// 50 racers on one key cost about 20 retries in a round on
		// PostgreSQL; 30 leaves room.
		Attempts: 30,
		// A serialization failure is usually settled within a millisecond.
		Base: time.Millisecond,
		// 64 x Base: past that, waiting longer does not help the race.
		Cap: 64 * time.Millisecond,
		// A store that does not answer in this long is treated as down.
		Total: 10 * time.Second,
		// A cluster with no primary (a Patroni switchover: about 2 s
		// without one, docs/store-ha.md) holds a call this long, then the
		// store is down: 503 with Retry-After. An unplanned failover (ttl
		// 20 s) outlasts it on purpose: a client is not held for half a
		// minute. Kept under an SDK's answer timeout (the endpoint's
		// upstream_timeout + 2 s; the drills' is 1.5 s + 2 s), so the
		// client gets the 503, not a timeout that may have run.
		Hold: 3 * time.Second,
		// A new primary is found within a tenth of a second; each try is
		// one connection attempt.
		HoldStep: 100 * time.Millisecond,
	},
	Record: Budget{
		// One result is written at most this often, first try included.
		Attempts: 30,
		// A blip of the store (a dropped connection, a lease move) is
		// usually over within a second.
		Base: 250 * time.Millisecond,
		// A store back after an outage is found within seconds.
		Cap: 4 * time.Second,
		// Covers a CockroachDB range lease move after a region loss (2-7 s)
		// several times over; it also bounds the gateway's Close.
		Total: 30 * time.Second,
	},
	Etcd: Budget{
		Attempts: 10,
		// An etcd proposal that timed out under load, or a leader
		// election, is usually over within a second or two.
		Base: 100 * time.Millisecond,
		Cap:  2 * time.Second,
		// Past this the cluster is down, not busy: the caller says so.
		Total: 30 * time.Second,
	},
	Schema: Budget{
		Attempts: 10,
		Base:     10 * time.Millisecond,
		Cap:      time.Second,
		// A step may rewrite a large table; its statements run on the
		// caller's context, this bounds the loop around them.
		Total: 10 * time.Minute,
	},
}

// Step returns the backoff step before attempt n+1 (n >= 1): Base doubled
// n-1 times, capped at Cap.
func (b Budget) Step(n int) time.Duration {
	d := b.Base
	for i := 1; i < n && d < b.Cap; i++ {
		d *= 2
	}
	return min(d, max(b.Cap, b.Base))
}

// Share is one call's budget, shared by every loop under the call: the
// attempts used and the time left. It is safe for concurrent use.
type Share struct {
	mu    sync.Mutex
	limit int
	used  int
	left  time.Duration
	// held is when the call's first outage failure was seen (Budget.Hold).
	held time.Time
}

// NewShare starts a share of b.
func NewShare(b Budget) *Share { return &Share{limit: b.Attempts, left: b.Total} }

type shareKey struct{}

// FromContext returns the share ctx carries, nil if none.
func FromContext(ctx context.Context) *Share {
	s, _ := ctx.Value(shareKey{}).(*Share)
	return s
}

// Call derives the context of one call within s: it carries s, so loops
// under it draw from s, and its deadline is the time s has left (at most
// limit when limit > 0). done charges the time the call took to s; call it
// when the call returns.
func (s *Share) Call(ctx context.Context, limit time.Duration) (_ context.Context, done func()) {
	return s.call(&shareCtx{Context: ctx, s: s}, limit)
}

// shareCtx is a context carrying a share: context.WithValue's, without
// boxing the key and the value.
type shareCtx struct {
	context.Context
	s *Share
}

// Value implements context.Context.
func (c *shareCtx) Value(key any) any {
	if _, ok := key.(shareKey); ok {
		return c.s
	}
	return c.Context.Value(key)
}

// newCall is NewShare(b).Call(ctx, 0) with the share, the context that
// carries it and the call's end in one allocation: every store call
// starts one.
func newCall(ctx context.Context, b Budget) (context.Context, *callState) {
	c := &callState{share: Share{limit: b.Attempts, left: b.Total}}
	c.Context, c.s = ctx, &c.share
	return c.open(0), c
}

// callState is a call that started its own share (newCall).
type callState struct {
	shareCall
	share Share
}

// Start is Call whose end is an Ender instead of a function: one
// allocation fewer (the call's context and its end are one object; a
// done function is a closure of its own). See Loop.Start.
func (s *Share) Start(ctx context.Context, limit time.Duration) (context.Context, Ender) {
	c := &shareCall{shareCtx: shareCtx{Context: ctx, s: s}}
	return c.open(limit), c
}

// shareCall is one call within a share: the context carrying the share,
// and what its end needs.
type shareCall struct {
	shareCtx
	cancel context.CancelFunc
	start  time.Time
}

// open derives the call's context (see Share.open).
func (c *shareCall) open(limit time.Duration) context.Context {
	var ctx context.Context
	ctx, c.cancel, c.start = c.s.open(&c.shareCtx, limit)
	return ctx
}

// End ends the call: see Share.Call's done.
func (c *shareCall) End() { c.s.close(c.cancel, c.start) }

// call is Call on ctx, which carries s already.
func (s *Share) call(ctx context.Context, limit time.Duration) (_ context.Context, done func()) {
	ctx, cancel, start := s.open(ctx, limit)
	return ctx, func() { s.close(cancel, start) }
}

// open derives a call's context from ctx (which carries s): its
// deadline is the time s has left, at most limit when limit > 0. start
// is when the call began, for close.
func (s *Share) open(ctx context.Context, limit time.Duration) (_ context.Context, cancel context.CancelFunc, start time.Time) {
	s.mu.Lock()
	left := s.left
	s.mu.Unlock()
	if limit > 0 {
		left = min(left, limit)
	}
	start = time.Now()
	ctx, cancel = context.WithTimeout(ctx, max(left, 0))
	return ctx, cancel, start
}

// close ends a call opened at start: it cancels its context and charges
// the time it took to s.
func (s *Share) close(cancel context.CancelFunc, start time.Time) {
	cancel()
	s.mu.Lock()
	s.left -= time.Since(start)
	s.mu.Unlock()
}

// take uses one attempt, at most min(s's limit, limit) in all; false when
// none is left.
func (s *Share) take(limit int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used >= min(s.limit, limit) {
		return false
	}
	s.used++
	return true
}

// hold gives back the attempt an outage failure spent and reports
// whether the call may still wait out the outage: less than limit has
// passed since its first outage failure (now, on the loop's clock).
func (s *Share) hold(now time.Time, limit time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held.IsZero() {
		s.held = now
	}
	if now.Sub(s.held) >= limit {
		return false
	}
	s.used--
	return true
}

// Used returns the attempts used so far.
func (s *Share) Used() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used
}

// Spent reports whether s has no attempt or no time left.
func (s *Share) Spent() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used >= s.limit || s.left <= 0
}
