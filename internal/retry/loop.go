package retry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idemcoord/idemcoord/clock"
)

// ExhaustedError reports that a call gave up: its attempts or its time ran
// out while the last attempt's failure still asked for another. It unwraps
// to that failure.
type ExhaustedError struct {
	// Op names the loop that gave up.
	Op string
	// Attempts is how many attempts the call's share had used.
	Attempts int
	// Err is the last attempt's failure.
	Err error
}

// Error implements error.
func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("retry: %s gave up after %d attempts: %v", e.Op, e.Attempts, e.Err)
}

// Unwrap returns the last failure.
func (e *ExhaustedError) Unwrap() error { return e.Err }

// Loop is the one retry loop. Its zero value is not usable: set Budget.
type Loop struct {
	// Budget is the share a call starts when its context carries none.
	Budget Budget
	// Clock is what backoff sleeps on. Default the system clock.
	Clock clock.Clock
	// Jitter returns a uniform duration in [0, d]. Default: no jitter
	// (the full step).
	Jitter func(d time.Duration) time.Duration
	// OnRetry, if set, is told of every attempt that is run again.
	OnRetry func(ctx context.Context, op string)
	// Outage, if set, reports a failure (one again accepted) that proves
	// the attempt did nothing and that no server could take it now: a
	// store failing over to a new primary. Such failures are waited out
	// for Budget.Hold, every Budget.HoldStep, without spending attempts.
	Outage func(error) bool
}

// Call returns ctx for one call of l's kind: ctx itself when it carries a
// share already (the call shares its caller's budget), else ctx carrying a
// new share of l.Budget with its deadline. done ends the call.
func (l *Loop) Call(ctx context.Context) (_ context.Context, done func()) {
	if FromContext(ctx) != nil {
		return ctx, func() {}
	}
	ctx, c := newCall(ctx, l.Budget)
	return ctx, c.End
}

// Ender ends a call started by Loop.Start or Share.Start.
type Ender interface {
	// End ends the call, as the done function of Loop.Call and Share.Call does.
	End()
}

// Start is Call whose end is an Ender instead of a function: a call
// that starts a share then costs one allocation fewer (the share, its
// context and its end are one object; a done function is a closure of
// its own). For the hot store calls (a claim, a finish).
func (l *Loop) Start(ctx context.Context) (context.Context, Ender) {
	if FromContext(ctx) != nil {
		return ctx, nopEnder{}
	}
	return newCall(ctx, l.Budget)
}

// nopEnder ends a call that shares its caller's share: nothing to do.
type nopEnder struct{}

func (nopEnder) End() {}

// Do runs attempt until it succeeds, fails with an error that again does
// not accept, or the call's share runs out of attempts or time; then it
// returns *ExhaustedError wrapping the last failure. Every attempt counts
// against the share, however deeply loops nest. attempt must leave nothing
// behind that a second run would trip over (a whole transaction, a
// statement that commits alone); again must refuse an error that says the
// attempt may have taken effect unless running it again is how that is
// settled.
//
// A context cancelled by the caller (not timed out) ends the loop with its
// error.
func (l *Loop) Do(ctx context.Context, op string, again func(error) bool, attempt func(context.Context) error) error {
	ctx, done := l.Call(ctx)
	defer done()
	share := FromContext(ctx)
	var last error
	for n := 1; ; n++ {
		if !share.take(l.Budget.Attempts) {
			return &ExhaustedError{Op: op, Attempts: share.Used(), Err: last}
		}
		err := attempt(ctx)
		if err == nil || !again(err) {
			return err
		}
		last = err
		d := l.Budget.Step(n)
		if l.Outage != nil && l.Budget.Hold > 0 && l.Outage(err) {
			if !share.hold(clock.Or(l.Clock).Now(), l.Budget.Hold) {
				return &ExhaustedError{Op: op, Attempts: share.Used(), Err: last}
			}
			d = max(l.Budget.HoldStep, time.Millisecond)
		}
		if share.Spent() || share.Used() >= l.Budget.Attempts {
			return &ExhaustedError{Op: op, Attempts: share.Used(), Err: last}
		}
		if l.OnRetry != nil {
			l.OnRetry(ctx, op)
		}
		if l.Jitter != nil {
			d = l.Jitter(d)
		}
		if err := clock.Sleep(ctx, clock.Or(l.Clock), d); err != nil {
			if errors.Is(err, context.Canceled) {
				return err
			}
			return &ExhaustedError{Op: op, Attempts: share.Used(), Err: last}
		}
	}
}
