//go:build race

package exchange

// raceEnabled is set when the tests run under the race detector.
const raceEnabled = true
