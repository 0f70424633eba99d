package drillpoint

import (
	"sync/atomic"
	"time"

	"github.com/idemcoord/idemcoord/clock"
)

// SkewClock is a clock.Clock whose Now is its base clock's plus an
// offset that can change at any time: the clock skew of the drills. Its
// timers and tickers are the base clock's, unchanged (a skewed machine's
// clock reads wrong; its timers still measure real intervals). It is safe
// for concurrent use.
type SkewClock struct {
	base   clock.Clock
	offset atomic.Int64 // nanoseconds
}

var _ clock.Clock = (*SkewClock)(nil)

// NewSkewClock returns a SkewClock over base (clock.Real() when nil), at
// offset zero.
func NewSkewClock(base clock.Clock) *SkewClock {
	return &SkewClock{base: clock.Or(base)}
}

// Now returns the base clock's time plus the offset. The result keeps
// the base's monotonic reading shifted by the offset too, so durations
// measured across a change of offset see the jump, as they would on a
// machine whose clock was stepped.
func (c *SkewClock) Now() time.Time { return c.base.Now().Add(c.Offset()) }

// NewTimer implements clock.Clock with the base clock's timer.
func (c *SkewClock) NewTimer(d time.Duration) clock.Timer { return c.base.NewTimer(d) }

// NewTicker implements clock.Clock with the base clock's ticker.
func (c *SkewClock) NewTicker(d time.Duration) clock.Ticker { return c.base.NewTicker(d) }

// SetOffset makes Now read offset away from the base clock (negative is
// behind); 0 undoes the skew.
func (c *SkewClock) SetOffset(offset time.Duration) { c.offset.Store(int64(offset)) }

// Offset returns the current offset.
func (c *SkewClock) Offset() time.Duration { return time.Duration(c.offset.Load()) }
