package authn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	// DefaultTenant is the tenant of a token without a "tenant" claim.
	DefaultTenant = "default"
	// MaxNameBytes is the longest tenant or subject accepted, in bytes. It
	// bounds the actor scope stored with every record and index entry.
	MaxNameBytes = 128
)

// Principal is an authenticated caller.
type Principal struct {
	// Tenant is the "tenant" claim; empty means DefaultTenant.
	Tenant string
	// Subject is the "sub" claim.
	Subject string
}

// Scope returns the actor scope "<tenant>/<subject>" that idempotency keys
// are stored under. An empty Tenant is DefaultTenant, as for a token without
// the claim. Validate guarantees that neither part contains "/", so two
// principals never share a scope.
func (p Principal) Scope() string {
	return p.tenant() + "/" + p.Subject
}

// tenant returns Tenant with its default applied.
func (p Principal) tenant() string {
	if p.Tenant == "" {
		return DefaultTenant
	}
	return p.Tenant
}

// Validate reports whether the tenant and subject can form an unambiguous
// actor scope: each 1..MaxNameBytes bytes of UTF-8 without "/" or control
// characters (an empty Tenant is DefaultTenant).
func (p Principal) Validate() error {
	return errors.Join(checkName("tenant", p.tenant()), checkName("subject", p.Subject))
}

// checkName reports why s cannot be one part of an actor scope.
func checkName(field, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%s: empty", field)
	case len(s) > MaxNameBytes:
		return fmt.Errorf("%s: %d bytes, at most %d", field, len(s), MaxNameBytes)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s: not valid UTF-8", field)
	case strings.Contains(s, "/"):
		// "/" separates tenant from subject: tenant "a/b" with subject "c"
		// would share the scope of tenant "a" with subject "b/c".
		return fmt.Errorf("%s: contains %q", field, "/")
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		// Control characters would corrupt log lines and headers the scope
		// is written to (X-Idempotency-Actor).
		return fmt.Errorf("%s: contains a control character", field)
	}
	return nil
}

// principalKey is the context key of the Principal.
type principalKey struct{}

// WithPrincipal returns a copy of ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the Principal stored by WithPrincipal, and whether
// there was one.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
