package retry

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
)

// waitOnce runs b.Wait in a goroutine, advances clk by the step the wait
// must sleep, and returns the wait's error; a wait that sleeps longer
// than the step would never return, so the test times out.
func waitOnce(t *testing.T, b *Backoff, clk *clock.Fake) error {
	t.Helper()
	step := b.Next()
	done := make(chan error, 1)
	go func() { done <- b.Wait(context.Background()) }()
	clk.BlockUntil(1)
	clk.Advance(step - 1)
	select {
	case err := <-done:
		t.Fatalf("Wait returned before its step %s passed: %v", step, err)
	default:
	}
	clk.Advance(1)
	return <-done
}

func TestABackoffDoublesUpToItsCapOnTheInjectedClockAndResetStartsOver(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	b := &Backoff{Min: 50 * time.Millisecond, Max: 300 * time.Millisecond, Clock: clk}
	var got []time.Duration
	for range 6 {
		got = append(got, b.Next())
		if err := waitOnce(t, b, clk); err != nil {
			t.Fatalf("Wait: %v", err)
		}
	}
	b.Reset()
	got = append(got, b.Next())
	want := []time.Duration{50, 100, 200, 300, 300, 300, 50}
	for i := range want {
		want[i] *= time.Millisecond
	}
	if len(got) != len(want) {
		t.Fatalf("steps %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("steps %v, want %v", got, want)
			break
		}
	}
}

func TestABackoffWithoutACapWaitsItsMinEveryTime(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	b := &Backoff{Min: 500 * time.Millisecond, Clock: clk}
	for range 3 {
		if got := b.Next(); got != 500*time.Millisecond {
			t.Fatalf("Next = %s, want 500ms", got)
		}
		if err := waitOnce(t, b, clk); err != nil {
			t.Fatalf("Wait: %v", err)
		}
	}
}

func TestABackoffWaitEndsWithItsContext(t *testing.T) {
	b := &Backoff{Min: time.Hour, Clock: clock.NewFake(time.Unix(0, 0))}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on a cancelled context = %v, want context.Canceled", err)
	}
}
