package cluster

import (
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
)

// lineWriter hands each line written to it to the test.
type lineWriter chan string

func (w lineWriter) Write(p []byte) (int, error) {
	w <- string(p)
	return len(p), nil
}

// TestDrillBuildSaysItIsStillCompilingEvery15s checks that a person
// waiting for the drill build is told every 15 s of the (injected) clock
// that it is still compiling and for how long, and then how long it took;
// a build that failed is not reported as built.
func TestDrillBuildSaysItIsStillCompilingEvery15s(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC))
	lines := make(lineWriter, 8)
	done := buildProgress(lines, clk)
	clk.BlockUntil(1)
	for _, want := range []string{"(15s)", "(30s)", "(45s)", "(1m0s)"} {
		clk.Advance(buildProgressEvery)
		got := <-lines
		if !strings.HasPrefix(got, "still compiling the drill build of idemd ") || !strings.Contains(got, want) {
			t.Errorf("progress line %q, want one saying %s", got, want)
		}
	}
	clk.Advance(7 * time.Second)
	done(true)
	if got, want := <-lines, "built the drill idemd in 1m7s\n"; got != want {
		t.Errorf("last line %q, want %q", got, want)
	}
	if len(lines) != 0 {
		t.Errorf("more lines after the build: %q", <-lines)
	}

	failed := make(lineWriter, 8)
	done = buildProgress(failed, clk)
	done(false)
	if len(failed) != 0 {
		t.Errorf("a failed build printed %q", <-failed)
	}
	buildProgress(nil, clk)(true) // nothing to tell, nothing started
}
