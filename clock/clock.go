package clock

import (
	"context"
	"time"
)

// Clock tells the time and makes timers and tickers.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a timer that fires once after d.
	NewTimer(d time.Duration) Timer
	// NewTicker returns a ticker that fires every d (d > 0).
	NewTicker(d time.Duration) Ticker
}

// Timer is a one-shot timer made by a Clock.
type Timer interface {
	// C returns the channel the timer fires on.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it was
	// still pending.
	Stop() bool
	// Reset re-arms the timer to fire after d; it reports whether it was
	// still pending.
	Reset(d time.Duration) bool
}

// Ticker fires repeatedly at an interval.
type Ticker interface {
	// C returns the channel the ticker fires on.
	C() <-chan time.Time
	// Stop turns the ticker off.
	Stop()
	// Reset changes the interval and restarts the period from now.
	Reset(d time.Duration)
}

// Real returns the system clock.
func Real() Clock { return realClock{} }

// Or returns c, or the system clock when c is nil: the default every
// Config with a Clock field applies.
func Or(c Clock) Clock {
	if c == nil {
		return Real()
	}
	return c
}

// Sleep waits for d on c, or until ctx ends (returning ctx.Err()).
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type realClock struct{}

func (realClock) Now() time.Time                   { return time.Now() }
func (realClock) NewTimer(d time.Duration) Timer   { return realTimer{time.NewTimer(d)} }
func (realClock) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time        { return t.t.C }
func (t realTimer) Stop() bool                 { return t.t.Stop() }
func (t realTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }

type realTicker struct{ t *time.Ticker }

func (t realTicker) C() <-chan time.Time   { return t.t.C }
func (t realTicker) Stop()                 { t.t.Stop() }
func (t realTicker) Reset(d time.Duration) { t.t.Reset(d) }
