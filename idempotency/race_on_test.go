//go:build race

package idempotency

// raceEnabled is set when the tests run under the race detector.
const raceEnabled = true
