package drillpoint

import (
	"errors"
	"fmt"
)

// Point names one crash point of the request path.
type Point string

// The crash points (see the package documentation).
const (
	// AfterClaim is reached once a claim (first run or takeover) is
	// committed, before anything is sent upstream.
	AfterClaim Point = "after_claim"
	// AfterUpstream is reached when the upstream answered (or failed),
	// before the result is recorded.
	AfterUpstream Point = "after_upstream"
	// BeforeFinish is reached just before the store's finish statement
	// starts.
	BeforeFinish Point = "before_finish"
	// DuringCommit is reached when the finish statement's commit reached
	// the store and its reply came back, before the reply is acted on: the
	// result is recorded, the client never hears of it.
	DuringCommit Point = "during_commit"
)

// ErrUnknownPoint is returned by Parse for a name that is no crash point.
var ErrUnknownPoint = errors.New("drillpoint: unknown crash point")

// Points returns every crash point, in the order a request reaches them.
func Points() []Point { return []Point{AfterClaim, AfterUpstream, BeforeFinish, DuringCommit} }

// Parse returns the crash point named name, or an error wrapping
// ErrUnknownPoint that names the known ones.
func Parse(name string) (Point, error) {
	for i, p := range Points() {
		if string(p) == name {
			return Points()[i], nil
		}
	}
	return "", fmt.Errorf("%w %q (known: %q)", ErrUnknownPoint, name, Points())
}

// bit is p's bit in the armed set (0 for an unknown point).
func (p Point) bit() uint32 {
	for i, q := range Points() {
		if q == p {
			return 1 << i
		}
	}
	return 0
}
