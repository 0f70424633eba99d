package failover

import (
	"fmt"
	"strings"

	"github.com/idemcoord/idemcoord/ownership"
)

// Policy says what an endpoint does while its actor's owner region is
// lost. It is an endpoint's `failover` field in the YAML configuration
// (config.Endpoint.Failover); this file is the only place that knows the
// policies: adding one is a row in policies and nothing else.
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

// policies lists every known policy, in the order error messages name
// them, with the Action it takes for a FAILED_OVER shard whose new owner
// is live (every other case is decided the same way for all policies:
// see Decide).
var policies = []struct {
	policy     Policy
	failedOver Action
}{
	{Reject, Refuse},
	{Transfer, Serve},
}

// Validate reports whether p is a known policy; "" is not (a configuration
// fills in DefaultPolicy before validating). The error matches
// ErrBadPolicy and reads `must be "reject" or "transfer", got "x"`, for a
// caller to put under the field's name.
func (p Policy) Validate() error {
	for _, known := range policies {
		if known.policy == p {
			return nil
		}
	}
	return badPolicyError{got: p}
}

// ParsePolicy parses a configured policy; "" is DefaultPolicy.
func ParsePolicy(s string) (Policy, error) {
	if s == "" {
		return DefaultPolicy, nil
	}
	p := Policy(s)
	if err := p.Validate(); err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadPolicy, err)
	}
	return p, nil
}

// badPolicyError is Validate's error: it names the choices, and matches
// ErrBadPolicy.
type badPolicyError struct{ got Policy }

func (e badPolicyError) Error() string {
	names := make([]string, len(policies))
	for i, known := range policies {
		names[i] = fmt.Sprintf("%q", known.policy)
	}
	choices := strings.Join(names, " or ")
	if len(names) > 2 {
		choices = strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	}
	return fmt.Sprintf("must be %s, got %q", choices, e.got)
}

func (e badPolicyError) Is(target error) bool { return target == ErrBadPolicy }

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
//   - FAILED_OVER: the policy's own action (Refuse under Reject, Serve
//     under Transfer);
//   - owner Suspect or Failed (not moved yet): Wait under every policy
//     (the owner may still be writing, and the controller is about to
//     move the shard);
//   - otherwise Serve.
//
// An unknown policy (and "") is treated as Reject, an unknown state as
// FENCING: every doubt resolves toward executing nothing.
func (p Policy) Decide(state ownership.State, owner RegionState) Action {
	switch state {
	case ownership.Active:
	case ownership.FailedOver:
		if a := p.onFailedOver(); a != Serve {
			return a
		}
	default:
		return Wait
	}
	if owner == Suspect || owner == Failed {
		return Wait
	}
	return Serve
}

// onFailedOver is p's action for a FAILED_OVER shard; Refuse for an
// unknown policy.
func (p Policy) onFailedOver() Action {
	for _, known := range policies {
		if known.policy == p {
			return known.failedOver
		}
	}
	return Refuse
}
