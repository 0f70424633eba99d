package failover

import (
	"github.com/idemcoord/idemcoord/failover/policy"
	"github.com/idemcoord/idemcoord/ownership"
)

// Situate reduces a shard in state (as the ownership cache holds it),
// owned by a region in liveness state owner (Tracker.State of the owner),
// to the policy.Situation the failover policies decide on:
//
//   - FENCING: Moving (nobody writes during a transfer);
//   - FAILED_OVER: FailedOver, or NewOwnerDown when its new owner is
//     Suspect or Failed in turn;
//   - ACTIVE with the owner Suspect or Failed (not moved yet): OwnerDown
//     (the owner may still be writing, and the controller is about to
//     move the shard);
//   - otherwise Settled.
//
// An unknown state is Moving: every doubt resolves toward executing
// nothing.
func Situate(state ownership.State, owner RegionState) policy.Situation {
	down := owner == Suspect || owner == Failed
	switch {
	case state == ownership.FailedOver && down:
		return policy.NewOwnerDown
	case state == ownership.FailedOver:
		return policy.FailedOver
	case state != ownership.Active:
		return policy.Moving
	case down:
		return policy.OwnerDown
	}
	return policy.Settled
}

// Decide returns what a gateway does with a request of an endpoint with
// policy p for a shard in state owned by a region in liveness state owner:
// p's action in Situate(state, owner). An unknown policy (and "") acts as
// policy.Reject.
func Decide(p policy.Policy, state ownership.State, owner RegionState) policy.Action {
	return p.In(Situate(state, owner))
}
