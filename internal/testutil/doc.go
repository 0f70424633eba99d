// Package testutil holds what the tests of several packages share:
// Eventually for polling a real condition, a concurrency-safe log
// buffer, a reader of OpenTelemetry metrics by name, one cached build
// of the module's commands, the HTTP contract's list of problem types,
// and RefusingAddr, an address of a peer that is down.
//
// Eventually is for conditions that change on their own (a process
// printed its address, a watch delivered an event); a test never polls
// to wait out a lease or a TTL: it moves the injected clock or the
// database's time.
package testutil
