package failover_test

import (
	"fmt"

	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/ownership"
)

// A gateway asks Decide before it executes anything: here a charge
// (reject) and a profile update (transfer) for a shard that failed over.
func ExamplePolicy_Decide() {
	for _, p := range []failover.Policy{failover.Reject, failover.Transfer} {
		fmt.Println(p, p.Decide(ownership.FailedOver, failover.Healthy))
	}
	fmt.Println("suspect owner:", failover.Transfer.Decide(ownership.Active, failover.Suspect))
	// Output:
	// reject refuse
	// transfer serve
	// suspect owner: wait
}
