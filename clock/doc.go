// Package clock is the one source of time for everything in idemcoord whose
// policy depends on it: leases and heartbeats, retry backoff, liveness
// timing, SDK sleeps and drills. Production code takes a Clock (Real by
// default); tests pass a *Fake and move it with Advance instead of
// sleeping, so a test of a lease never waits for the lease.
//
// The shape follows Tailscale's tstime.Clock: Now, timers and tickers, with
// channels exposed through methods so a fake can drive them.
package clock
