package cluster

import (
	"fmt"
	"io"
	"time"

	"github.com/idemcoord/idemcoord/clock"
)

// buildProgressEvery is how often a running drill build says it is still
// running: often enough that a person watching a two-minute compile does
// not take it for a hang, seldom enough to stay a handful of lines.
const buildProgressEvery = 15 * time.Second

// buildProgress starts telling w, every buildProgressEvery of clk's time,
// that the drill build is still compiling and for how long ("still
// compiling the drill build of idemd (45s)..."). The returned done stops
// it and waits for it; done(true) then says how long the build took. A nil
// w prints nothing and starts nothing.
func buildProgress(w io.Writer, clk clock.Clock) (done func(built bool)) {
	if w == nil {
		return func(bool) {}
	}
	start := clk.Now()
	tick := clk.NewTicker(buildProgressEvery)
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			case now := <-tick.C():
				fmt.Fprintf(w, "still compiling the drill build of idemd (%s)...\n", now.Sub(start).Round(time.Second))
			}
		}
	}()
	return func(built bool) {
		tick.Stop()
		close(stop)
		<-stopped
		if built {
			fmt.Fprintf(w, "built the drill idemd in %s\n", clk.Now().Sub(start).Round(time.Second))
		}
	}
}
