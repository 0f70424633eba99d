package policy

import (
	"errors"
	"fmt"
	"strings"
)

// ErrBad is returned for an unknown failover policy (one that is not a
// row of policies).
var ErrBad = errors.New("failover: unknown policy")

// Policy says what an endpoint does while its actor's owner region is
// lost. It is an endpoint's `failover` field in the YAML configuration
// (config.Endpoint.Failover).
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

// Default is the policy of an endpoint that names none: Reject, because
// refusing is recoverable and a wrong transfer may not be.
const Default = Reject

// Situation is where a shard stands, as far as a failover policy cares:
// the shard's ownership state and its owner's liveness reduced to the
// cases the policies tell apart. The failover package derives it from
// the ownership directory and the liveness tracker (failover.Situate).
type Situation int

// Situations, one column each in policies.
const (
	// Moving: a transfer is under way (FENCING), or the state is not
	// known; nobody writes the shard until it ends.
	Moving Situation = iota
	// OwnerDown: the owner is suspect or failed and its shards are not
	// moved yet; the owner may still be writing.
	OwnerDown
	// FailedOver: the shard was moved to a failover region whose
	// instances are live.
	FailedOver
	// NewOwnerDown: the shard was moved to a failover region that is
	// suspect or failed in turn.
	NewOwnerDown
	// Settled: the owner serves the shard (ACTIVE, owner live).
	Settled
	situations
)

// policies lists every known policy, in the order error messages name
// them, with the Action it takes in each Situation. Moving and OwnerDown
// wait under every policy (nobody writes during a transfer; a suspect
// owner may still be writing); the policies differ once a shard failed
// over.
var policies = []struct {
	policy Policy
	act    [situations]Action
}{
	{Reject, [situations]Action{Moving: Wait, OwnerDown: Wait, FailedOver: Refuse, NewOwnerDown: Refuse, Settled: Serve}},
	{Transfer, [situations]Action{Moving: Wait, OwnerDown: Wait, FailedOver: Serve, NewOwnerDown: Wait, Settled: Serve}},
}

// Validate reports whether p is a known policy; "" is not (a configuration
// fills in Default before validating). The error matches ErrBad and reads
// `must be "reject" or "transfer", got "x"`, for a caller to put under the
// field's name.
func (p Policy) Validate() error {
	if _, ok := p.row(); ok {
		return nil
	}
	return badError{got: p}
}

// Parse parses a configured policy; "" is Default.
func Parse(s string) (Policy, error) {
	if s == "" {
		return Default, nil
	}
	p := Policy(s)
	if err := p.Validate(); err != nil {
		return "", fmt.Errorf("%w: %v", ErrBad, err)
	}
	return p, nil
}

// In returns p's action in situation s. An unknown policy (and "") acts
// as Reject, an unknown situation as Moving: every doubt resolves toward
// executing nothing.
func (p Policy) In(s Situation) Action {
	row, ok := p.row()
	if !ok {
		row, _ = Reject.row()
	}
	if s < 0 || s >= situations {
		s = Moving
	}
	return row[s]
}

// row returns p's row of policies.
func (p Policy) row() ([situations]Action, bool) {
	for _, known := range policies {
		if known.policy == p {
			return known.act, true
		}
	}
	return [situations]Action{}, false
}

// badError is Validate's error: it names the choices, and matches ErrBad.
type badError struct{ got Policy }

func (e badError) Error() string {
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

func (e badError) Is(target error) bool { return target == ErrBad }
