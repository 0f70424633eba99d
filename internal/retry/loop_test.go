package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

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
