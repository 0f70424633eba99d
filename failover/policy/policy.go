// Package policy names the failover policies an endpoint can choose. It
// has no dependencies, so the pure protocol package (idempotency) and the
// configuration can name a policy without pulling in etcd; package
// failover decides with it.
package policy

import (
	"errors"
	"fmt"
)

// ErrBadPolicy is returned for a failover policy other than reject or
// transfer.
var ErrBadPolicy = errors.New("failover: unknown policy")

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

// Default is the policy of an endpoint that names none: Reject, because
// refusing is recoverable and a wrong transfer may not be.
const Default = Reject

// Valid reports whether p is a known policy.
func (p Policy) Valid() bool { return p == Reject || p == Transfer }

// Parse parses a configured policy; "" is Default.
func Parse(s string) (Policy, error) {
	if s == "" {
		return Default, nil
	}
	if p := Policy(s); p.Valid() {
		return p, nil
	}
	return "", fmt.Errorf("%w: must be %q or %q, got %q", ErrBadPolicy, Reject, Transfer, s)
}
