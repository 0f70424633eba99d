package drillpoint_test

import (
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/internal/drillpoint"
)

// TestSkewClockShiftsNowOnly: an offset moves Now by exactly that much,
// forward or back, and 0 undoes it; timers and tickers keep measuring the
// base clock's intervals whatever the offset (a skewed machine's clock
// reads wrong, its timers do not run fast).
func TestSkewClockShiftsNowOnly(t *testing.T) {
	base := clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	c := drillpoint.NewSkewClock(base)
	for _, off := range []time.Duration{0, -1500 * time.Millisecond, time.Hour, 0} {
		c.SetOffset(off)
		if got := c.Offset(); got != off {
			t.Errorf("Offset() = %v after SetOffset(%v)", got, off)
		}
		if got, want := c.Now(), base.Now().Add(off); !got.Equal(want) {
			t.Errorf("offset %v: Now() = %v, want base + offset = %v", off, got, want)
		}
	}

	timer := c.NewTimer(time.Second)
	ticker := c.NewTicker(time.Second)
	defer ticker.Stop()
	c.SetOffset(time.Hour) // a step of the clock fires nothing
	base.Advance(999 * time.Millisecond)
	select {
	case <-timer.C():
		t.Fatal("timer fired before its second on the base clock")
	case <-ticker.C():
		t.Fatal("ticker fired before its second on the base clock")
	default:
	}
	base.Advance(time.Millisecond)
	for name, ch := range map[string]<-chan time.Time{"timer": timer.C(), "ticker": ticker.C()} {
		select {
		case <-ch:
		default:
			t.Errorf("%s did not fire after its second on the base clock", name)
		}
	}
}

// TestSkewClockDefaultsToTheSystemClock: over a nil base the skew clock
// reads the system clock plus its offset.
func TestSkewClockDefaultsToTheSystemClock(t *testing.T) {
	c := drillpoint.NewSkewClock(nil)
	c.SetOffset(-time.Hour)
	before := time.Now()
	got := c.Now()
	after := time.Now()
	if got.Before(before.Add(-time.Hour)) || got.After(after.Add(-time.Hour)) {
		t.Errorf("Now() = %v, want within [%v, %v] (system clock - 1h)", got, before.Add(-time.Hour), after.Add(-time.Hour))
	}
}

// TestParseNamesTheKnownPoints: every crash point parses to itself; any
// other name is ErrUnknownPoint naming all four.
func TestParseNamesTheKnownPoints(t *testing.T) {
	for _, p := range drillpoint.Points() {
		if got, err := drillpoint.Parse(string(p)); err != nil || got != p {
			t.Errorf("Parse(%q) = %q, %v", p, got, err)
		}
	}
	for _, name := range []string{"", "after-claim", "AFTER_CLAIM", "during_comit"} {
		_, err := drillpoint.Parse(name)
		if err == nil {
			t.Errorf("Parse(%q) accepted", name)
			continue
		}
		for _, p := range drillpoint.Points() {
			if !strings.Contains(err.Error(), string(p)) {
				t.Errorf("Parse(%q) error %q does not name %s", name, err, p)
			}
		}
	}
}
