package retry

import (
	"context"
	"time"

	"github.com/idemcoord/idemcoord/clock"
)

// Backoff is the wait of a reconnect loop: a loop that must keep trying
// for as long as its owner lives (a lost liveness lease, a broken
// ownership watch, a controller's lost election, claims to release while
// the store is away), which Loop's budgets do not fit because giving up
// is not an option there. Each Wait sleeps the current step on the
// injected clock and doubles it, from Min up to Max; Reset after a
// success starts again at Min. It is not safe for concurrent use: one
// loop owns one Backoff.
type Backoff struct {
	// Min is the first wait, and the wait after Reset. Required.
	Min time.Duration
	// Max caps the doubling. Zero or less than Min means Min (a fixed
	// wait).
	Max time.Duration
	// Clock is what Wait sleeps on. Default the system clock.
	Clock clock.Clock

	step time.Duration
}

// Wait sleeps the current step on b.Clock, or until ctx ends, and doubles
// the step for the next Wait (up to Max). It returns ctx's error if ctx
// ended first, else nil.
func (b *Backoff) Wait(ctx context.Context) error {
	if b.step < b.Min {
		b.step = b.Min
	}
	d := b.step
	b.step = min(2*b.step, max(b.Max, b.Min))
	return clock.Sleep(ctx, clock.Or(b.Clock), d)
}

// Next returns how long the next Wait sleeps.
func (b *Backoff) Next() time.Duration { return max(b.step, b.Min) }

// Reset makes the next Wait sleep Min again: call it after a success.
func (b *Backoff) Reset() { b.step = b.Min }
