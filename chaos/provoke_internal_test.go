package chaos

import (
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/chaos/failpoint"
	"github.com/idemcoord/idemcoord/chaos/scenario"
)

// TestProvocationEndsBeforeTheFirstFaultOfEveryShippedScenario checks, for
// every shipped scenario at the lengths drills use and for many seeds,
// that the drill's own provocation (its planned move away and back
// included) starts after the traffic started and is over before the
// first fault, so no failover pass meets the planned move's drain.
func TestProvocationEndsBeforeTheFirstFaultOfEveryShippedScenario(t *testing.T) {
	for _, name := range scenario.Names() {
		sc, err := scenario.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []time.Duration{20 * time.Second, 30 * time.Second, sc.Duration, 10 * time.Minute} {
			for seed := uint64(1); seed <= 50; seed++ {
				sched, err := failpoint.Plan(sc.FaultSpec(d), seed)
				if err != nil {
					t.Fatalf("%s %v seed %d: %v", name, d, seed, err)
				}
				at, dwell := provokeAt(sched, d)
				first := sched.Faults[0].At
				for _, f := range sched.Faults {
					first = min(first, f.At)
				}
				if at <= 0 || dwell <= 0 || at+dwell > first/2 {
					t.Errorf("%s %v seed %d: provoked at %v for %v, first fault at %v", name, d, seed, at, dwell, first)
				}
			}
		}
	}
	at, dwell := provokeAt(failpoint.Schedule{}, 8*time.Second)
	if at != 1500*time.Millisecond || dwell != 1500*time.Millisecond {
		t.Errorf("no fault: provoked at %v for %v, want 1.5s for 1.5s", at, dwell)
	}
}
