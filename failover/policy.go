package failover

import (
	"fmt"

	"github.com/idemcoord/idemcoord/ownership"
)

// Policy says what an endpoint does while its actor's owner region is lost.
// It is an endpoint's `failover` field in the YAML configuration.
type Policy string

// Failover policies.
const (
	// Reject answers 503 + Retry-After (problem type region-failover) for
	// every actor of a FAILED_OVER shard, executes nothing and leaves the
	// dead region's in-flight operations alone, until the shard fails back
	// or an operator accepts the new owner: the safe choice for high-risk
	// writes such as charges.
	Reject Policy = "reject"
	// Transfer is served by the new owner as soon as the move commits;
	// operations the dead region left in progress are taken over only
	// after their lease expired, through the resolve path.
	Transfer Policy = "transfer"
)

// DefaultPolicy is the policy of an endpoint that names none: Reject,
// because refusing is recoverable and a wrong transfer may not be.
const DefaultPolicy = Reject

// Valid reports whether p is a known policy.
func (p Policy) Valid() bool { return p == Reject || p == Transfer }

// ParsePolicy parses a configured policy; "" is DefaultPolicy.
func ParsePolicy(s string) (Policy, error) {
	if s == "" {
		return DefaultPolicy, nil
	}
	if p := Policy(s); p.Valid() {
		return p, nil
	}
	return "", fmt.Errorf("%w: must be %q or %q, got %q", ErrBadPolicy, Reject, Transfer, s)
}

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
