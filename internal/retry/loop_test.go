package retry_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/internal/retry"
)

var errConflict = errors.New("conflict")

func always(error) bool { return true }

// TestNestedLoopsShareOneBudget: loops nested under one call draw from
// one share, so an inner loop inside an outer one runs at most the
// budget's attempts in all, not their product, and the call ends with
// *ExhaustedError wrapping the last failure.
func TestNestedLoopsShareOneBudget(t *testing.T) {
	l := &retry.Loop{Budget: retry.Budget{Attempts: 7, Base: time.Microsecond, Cap: time.Microsecond, Total: time.Minute}}
	runs := 0
	err := l.Do(context.Background(), "outer", always, func(ctx context.Context) error {
		return l.Do(ctx, "inner", always, func(context.Context) error { runs++; return errConflict })
	})
	var ex *retry.ExhaustedError
	if !errors.As(err, &ex) || !errors.Is(err, errConflict) {
		t.Fatalf("Do = %v, want *ExhaustedError wrapping the conflict", err)
	}
	// The outer loop's attempts count too: 7 in all, of which some run the
	// inner attempt.
	if runs >= 7 || ex.Attempts != 7 {
		t.Errorf("inner ran %d times, share used %d; want the share's 7 attempts in all", runs, ex.Attempts)
	}
}

// TestShareBoundsTheTimeOfItsCalls: a call within a share gets the time
// the share has left as its deadline, and a call's time is charged to it.
func TestShareBoundsTheTimeOfItsCalls(t *testing.T) {
	s := retry.NewShare(retry.Budget{Attempts: 3, Total: time.Hour})
	ctx, done := s.Call(context.Background(), time.Minute)
	dl, ok := ctx.Deadline()
	done()
	if !ok || time.Until(dl) > time.Minute {
		t.Errorf("deadline %v, want at most the per-call minute", dl)
	}
	if retry.FromContext(ctx) != s {
		t.Error("the call's context does not carry its share")
	}
	spent := retry.NewShare(retry.Budget{Attempts: 3, Total: time.Nanosecond})
	_, done = spent.Call(context.Background(), 0)
	time.Sleep(time.Millisecond) // a call that outlasts its share's time
	done()
	if !spent.Spent() {
		t.Error("a share whose time was used up is not spent")
	}
}

// TestStepDoublesUpToTheCap: backoff steps double from Base and stop at Cap.
func TestStepDoublesUpToTheCap(t *testing.T) {
	b := retry.Default.Store
	for _, tt := range []struct {
		n    int
		want time.Duration
	}{{1, time.Millisecond}, {2, 2 * time.Millisecond}, {7, 64 * time.Millisecond}, {30, 64 * time.Millisecond}} {
		if got := b.Step(tt.n); got != tt.want {
			t.Errorf("Step(%d) = %v, want %v", tt.n, got, tt.want)
		}
	}
}

var errNoPrimary = errors.New("no primary")

// TestAnOutageIsWaitedOutForTheHoldWithoutSpendingAttempts: failures the
// loop's Outage names (no server could take the call: a store between two
// primaries) spend no attempt; the call runs them again every HoldStep
// until the outage ends, and gives up once Hold has passed since the
// first one, on the loop's clock.
func TestAnOutageIsWaitedOutForTheHoldWithoutSpendingAttempts(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC))
	b := retry.Budget{Attempts: 3, Base: time.Millisecond, Cap: time.Millisecond, Total: time.Hour,
		Hold: 4 * time.Second, HoldStep: 100 * time.Millisecond}
	outage := func(err error) bool { return errors.Is(err, errNoPrimary) }
	run := func(failures int) (runs int, err error) {
		l := &retry.Loop{Budget: b, Clock: fake, Outage: outage}
		done := make(chan error, 1)
		go func() {
			done <- l.Do(context.Background(), "claim", always, func(context.Context) error {
				runs++
				if runs <= failures {
					return errNoPrimary
				}
				return nil
			})
		}()
		for {
			select {
			case err := <-done:
				return runs, err
			default:
				if fake.Waiters() > 0 {
					fake.Advance(b.HoldStep)
				}
				runtime.Gosched()
			}
		}
	}
	// 30 outage failures (3 s of hold) with a budget of 3 attempts: held,
	// then served.
	if runs, err := run(30); err != nil || runs != 31 {
		t.Fatalf("a 3 s outage: %d runs, %v; want 31 runs and success", runs, err)
	}
	// An outage that lasts: given up once the hold has passed, as
	// *ExhaustedError wrapping the outage.
	runs, err := run(1 << 30)
	var ex *retry.ExhaustedError
	if !errors.As(err, &ex) || !errors.Is(err, errNoPrimary) {
		t.Fatalf("a lasting outage: %v, want *ExhaustedError wrapping it", err)
	}
	if want := int(b.Hold/b.HoldStep) + 1; runs != want {
		t.Errorf("a lasting outage ran %d times, want %d (one every step for the hold)", runs, want)
	}
	// Without Outage the same failures spend the attempts.
	l := &retry.Loop{Budget: b, Clock: fake}
	var n atomic.Int32
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				fake.Advance(b.Cap)
				runtime.Gosched()
			}
		}
	}()
	err = l.Do(context.Background(), "claim", always, func(context.Context) error { n.Add(1); return errNoPrimary })
	if !errors.As(err, &ex) || n.Load() != 3 {
		t.Errorf("without Outage: %d runs, %v; want the 3 attempts, then *ExhaustedError", n.Load(), err)
	}
}
