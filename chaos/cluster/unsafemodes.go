package cluster

import "github.com/idemcoord/idemcoord/chaos/unsafemode"

// The Options.Unsafe values: the unsafe modes of chaos/unsafemode, which
// breaks the coordinator on purpose (drills only).
const (
	// UnsafeRegionLocalClaims is unsafemode.RegionLocalClaims.
	UnsafeRegionLocalClaims = unsafemode.RegionLocalClaims
	// UnsafeSkewedExpiry is unsafemode.SkewedExpiry.
	UnsafeSkewedExpiry = unsafemode.SkewedExpiry
)

// ErrUnknownUnsafe is returned by StartRegional and the process cluster
// for an Options.Unsafe they do not know (unsafemode.ErrUnknown).
var ErrUnknownUnsafe = unsafemode.ErrUnknown

// UnsafeModes lists the unsafe modes, for help texts and errors.
func UnsafeModes() []string { return unsafemode.Modes() }
