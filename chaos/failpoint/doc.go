// Package failpoint plans and runs a drill's faults. A Schedule is plain
// data computed from a Spec and a seed alone, so the same seed replays the
// same faults at the same offsets; Run executes it against an Injector
// (the cluster) on an injected clock and records each fault's window in
// the history, next to the traffic it disturbed.
package failpoint
