package client

import (
	"sync"
	"time"
)

// Circuit breaker timings: a region that could not be reached is left
// alone for breakerCooldown, then probed (GET /readyz) before any intent
// goes there again; each failed probe doubles the wait, up to
// breakerMaxCooldown, so a region that stays dead costs one probe every
// half minute and no intent at all.
const (
	breakerCooldown    = time.Second
	breakerMaxCooldown = 30 * time.Second
	// probeTimeout bounds one /readyz probe. The gateway's own readiness
	// check gives its store 2 s; a region slower than that is not one to
	// send intents to.
	probeTimeout = 2 * time.Second
)

// breaker is one region's health as the client saw it: closed (use it),
// open until a time (skip it), or probing (skip it; one probe of its
// /readyz is under way). One transport failure opens it: the region did
// not answer at all, and the next region is one attempt away. Any answer,
// whatever its status, closes it: the region is there.
type breaker struct {
	mu        sync.Mutex
	open      bool
	probing   bool
	openUntil time.Time
	cooldown  time.Duration // the last wait; the next failed probe doubles it
}

// usable reports whether an intent may go to the region now. When the
// region's wait is over and no probe runs, it starts one: probe is true
// and the caller must run it and report with probed. The region stays
// unusable until a probe succeeds.
func (b *breaker) usable(now time.Time) (ok, probe bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case !b.open:
		return true, false
	case b.probing || now.Before(b.openUntil):
		return false, false
	}
	b.probing = true
	return false, true
}

// failed records a transport failure of an attempt: the region opens for
// breakerCooldown, unless it is open already (its wait is not extended by
// attempts that were on their way when it opened).
func (b *breaker) failed(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open {
		return
	}
	b.open, b.cooldown, b.openUntil = true, breakerCooldown, now.Add(breakerCooldown)
}

// answered records an answer from the region: it is reachable.
func (b *breaker) answered() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.open, b.probing = false, false
}

// probed records a probe's result: ready closes the breaker, anything
// else opens it for twice the last wait (up to breakerMaxCooldown).
func (b *breaker) probed(now time.Time, ready bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.probing = false
	if ready {
		b.open = false
		return
	}
	b.cooldown = min(2*max(b.cooldown, breakerCooldown/2), breakerMaxCooldown)
	b.open, b.openUntil = true, now.Add(b.cooldown)
}

// until returns when the breaker's current wait ends (zero if closed).
func (b *breaker) until() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		return time.Time{}
	}
	return b.openUntil
}
