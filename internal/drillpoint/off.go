//go:build !drill

package drillpoint

// Enabled reports whether this is the drill build (-tags drill). It is
// false here: Hit does nothing and no crash point can be armed.
const Enabled = false

// Hit marks crash point p on the request path. Outside the drill build it
// does nothing and compiles to nothing.
func Hit(p Point) {}
