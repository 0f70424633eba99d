package admission

import (
	"fmt"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/config"
)

func TestLimiterRefillsOnTheClockAndForgetsFullBuckets(t *testing.T) {
	c := clock.NewFake(time.Unix(1_800_000_000, 0))
	l := newLimiter(c, []config.Endpoint{{Name: "e", Limit: config.Limit{Rate: "1/s", Burst: 2}}, {Name: "free"}})
	for i, want := range []bool{true, true, false} {
		if ok, _ := l.allow("e", "alice"); ok != want {
			t.Fatalf("take %d: %v, want %v", i, ok, want)
		}
	}
	if ok, wait := l.allow("e", "alice"); ok || wait != time.Second {
		t.Fatalf("empty bucket: ok %v wait %v, want a refusal for 1s", ok, wait)
	}
	c.Advance(time.Second)
	if ok, _ := l.allow("e", "alice"); !ok {
		t.Fatal("no token a second later")
	}
	if ok, _ := l.allow("free", "alice"); !ok {
		t.Fatal("an endpoint without a limit refused")
	}
	// Fill the map past the sweep threshold; once every bucket has
	// refilled, the next new actor sweeps them all away.
	for i := range limitSweepAt - 1 { // with alice: limitSweepAt buckets
		l.allow("e", fmt.Sprint("actor-", i))
	}
	c.Advance(2 * time.Second)
	l.allow("e", "late")
	if n := len(l.buckets); n != 1 {
		t.Fatalf("%d buckets kept after every one refilled, want 1 (the new one)", n)
	}
}
