package traffic

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestTheWaitBeforeAnIntentWithNoAttemptYetIsTheFirstAttemptsWait: in the
// sdk mode an intent's attempts are counted by the SDK's transport, so an
// intent whose Do made none (its token could not be had, under load) has
// zero attempts when the worker waits to drive it again. That wait is the
// first attempt's (up to RetryDelay, or the Retry-After), not a negative
// shift: a drill panicked on it (region-loss-transfer seed 3, sdk).
func TestTheWaitBeforeAnIntentWithNoAttemptYetIsTheFirstAttemptsWait(t *testing.T) {
	w := &worker{tr: &Traffic{p: Profile{RetryDelay: 100 * time.Millisecond}}, rng: rand.New(rand.NewPCG(1, 1))}
	for range 100 {
		if d := w.wait(0, 0); d < 0 || d > 100*time.Millisecond {
			t.Fatalf("wait(0 attempts) = %v, want within [0, 100ms]", d)
		}
	}
	if d := w.wait(0, time.Second); d != time.Second {
		t.Errorf("wait(0 attempts, Retry-After 1s) = %v, want 1s", d)
	}
}
