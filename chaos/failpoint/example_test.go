package failpoint_test

import (
	"fmt"
	"time"

	"github.com/idemcoord/idemcoord/chaos/failpoint"
)

// The same seed always gives the same schedule: a drill's faults replay
// from its seed alone.
func ExamplePlan() {
	spec := failpoint.Spec{
		Kinds: []failpoint.Kind{failpoint.KillRegion, failpoint.PauseRegion, failpoint.CutSQL}, Count: 3,
		Regions: []string{"us-east", "eu-west", "ap-south"}, Duration: 90 * time.Second, Warmup: 5 * time.Second,
		Cooldown: 10 * time.Second, MinFor: 4 * time.Second, MaxFor: 10 * time.Second, Lease: 3 * time.Second,
	}
	sched, err := failpoint.Plan(spec, 42)
	if err != nil {
		panic(err)
	}
	for _, f := range sched.Faults {
		fmt.Printf("at %v: %s\n", f.At, f)
	}
	// Output:
	// at 6.369s: pause_region us-east for 5.692s
	// at 40.349s: kill_region ap-south for 6.172s
	// at 1m8.799s: cut_sql ap-south for 7.449s
}
