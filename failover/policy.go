package failover

import (
	"fmt"

	"github.com/idemcoord/idemcoord/failover/policy"

	"github.com/idemcoord/idemcoord/ownership"
)

// Policy says what an endpoint does while its actor's owner region is
// lost (package policy, which has no dependencies, defines it).
type Policy = policy.Policy

// Failover policies (see package policy).
const (
	// Reject refuses writes for FAILED_OVER shards until failback or accept.
	Reject = policy.Reject
	// Transfer serves FAILED_OVER shards from the new owner.
	Transfer = policy.Transfer
	// DefaultPolicy is the policy of an endpoint that names none.
	DefaultPolicy = policy.Default
)

// ParsePolicy parses a configured policy; "" is DefaultPolicy.
func ParsePolicy(s string) (Policy, error) { return policy.Parse(s) }

// Action is what a gateway does with a request for a shard.
type Action int

// Actions, from Decide.
const (
	// Serve: route to the owner as usual.
	Serve Action = iota
	// Wait: answer 503 + Retry-After and execute nothing; the situation
	// resolves by itself (the owner is only suspect, or a transfer is
	// under way).
	Wait
	// Refuse: answer 503 + Retry-After with problem type region-failover
	// naming the shard's state; an operator must fail back or accept.
	Refuse
)

// String names the action.
func (a Action) String() string {
	switch a {
	case Serve:
		return "serve"
	case Wait:
		return "wait"
	case Refuse:
		return "refuse"
	}
	return fmt.Sprintf("action(%d)", int(a))
}

// Decide returns what a gateway does with a request of an endpoint with
// policy p for a shard in state (as the ownership cache holds it) owned by
// a region in liveness state owner (Tracker.State of the owner):
//
//   - FENCING: Wait, whatever the policy (nobody writes during a transfer);
//   - FAILED_OVER: Refuse under Reject, Serve under Transfer;
//   - owner Suspect or Failed (not moved yet): Wait under both policies
//     (the owner may still be writing, and the controller is about to
//     move the shard);
//   - otherwise Serve.
//
// An unknown policy is treated as Reject, an unknown state as FENCING:
// every doubt resolves toward executing nothing.
func Decide(p Policy, state ownership.State, owner RegionState) Action {
	switch state {
	case ownership.Active:
	case ownership.FailedOver:
		if p != Transfer {
			return Refuse
		}
	default:
		return Wait
	}
	if owner == Suspect || owner == Failed {
		return Wait
	}
	return Serve
}
