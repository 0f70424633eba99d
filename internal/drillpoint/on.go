//go:build drill

package drillpoint

import (
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// Enabled reports whether this is the drill build (-tags drill). It is
// true here: an armed crash point kills the process.
const Enabled = true

// armed is the set of armed points, one bit each (Point.bit).
var armed atomic.Uint32

// Hit marks crash point p on the request path: when p is armed the
// process kills itself with SIGKILL at once, exactly like kill -9 (no
// deferred code, no answer, no shutdown). Hit never returns then.
func Hit(p Point) {
	if armed.Load()&p.bit() == 0 {
		return
	}
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	for {
		// SIGKILL is not delivered to this thread alone: keep the calling
		// goroutine from acting until the kernel ends the process.
		time.Sleep(time.Hour)
	}
}

// Arm arms p (idempotent); an unknown point is ErrUnknownPoint.
func Arm(p Point) error {
	b := p.bit()
	if b == 0 {
		_, err := Parse(string(p))
		return err
	}
	armed.Or(b)
	return nil
}

// Disarm disarms p (idempotent); an unknown point is ErrUnknownPoint.
func Disarm(p Point) error {
	b := p.bit()
	if b == 0 {
		_, err := Parse(string(p))
		return err
	}
	armed.And(^b)
	return nil
}

// Armed returns the armed points, in the order a request reaches them.
func Armed() []Point {
	set := armed.Load()
	out := []Point{}
	for _, p := range Points() {
		if set&p.bit() != 0 {
			out = append(out, p)
		}
	}
	return out
}
