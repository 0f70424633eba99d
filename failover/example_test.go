package failover_test

import (
	"fmt"

	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/failover/policy"
	"github.com/idemcoord/idemcoord/ownership"
)

// A gateway asks Decide before it executes anything: here a charge
// (reject) and a profile update (transfer) for a shard that failed over.
func ExampleDecide() {
	for _, p := range []policy.Policy{policy.Reject, policy.Transfer} {
		fmt.Println(p, failover.Decide(p, ownership.FailedOver, failover.Healthy))
	}
	fmt.Println("suspect owner:", failover.Decide(policy.Transfer, ownership.Active, failover.Suspect))
	// Output:
	// reject refuse
	// transfer serve
	// suspect owner: wait
}
