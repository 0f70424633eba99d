// Package storetest is the conformance suite of the store contract
// (package store): claim races with one winner, replays and fingerprint
// mismatches, fencing, takeover after lease expiry, ambiguous commits,
// cleanup, purge, the async queue, cancel, fences, audit and admin.
//
// A backend runs it from a test of its own, on a real database:
//
//	func TestStore(t *testing.T) { storetest.Run(t, harness()) }
//
// where harness returns a Harness that opens fresh stores and reaches
// below the contract where the suite must (the stored bytes of a record,
// a fence moved elsewhere, a connection cut around a commit). No test
// sleeps: lease and TTL time is a *Clock the tests move. See
// docs/store.md and sqlstore/conformance_test.go.
package storetest
