package main

// The environment the drill build of idemd reads (docs/drills.md,
// "The drill build"). A normal build refuses to start
// when either is set, so a drill never runs against a binary that would
// silently ignore its faults.
const (
	// envDrillControl is the loopback address of the drill control API.
	envDrillControl = "IDEMCOORD_DRILL_CONTROL"
	// envDrillUnsafe names the unsafe mode to start in
	// (unsafemode.Modes).
	envDrillUnsafe = "IDEMCOORD_DRILL_UNSAFE"
)
