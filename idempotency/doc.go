// Package idempotency is the pure protocol core of idemcoord: validated keys,
// request fingerprints, the operation state machine, and the per-endpoint
// policy that says how long a key lives, how long a lease lasts, what is
// stored and what is replayed.
//
// The package does no I/O. The SQL store (package sqlstore) persists what this
// package decides, and the gateway (package gateway) maps it to HTTP.
package idempotency
