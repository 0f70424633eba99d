package upstream

import (
	"sync"
	"time"
)

// durationWeight is the weight of the newest execution in an endpoint's
// moving average: about the last ten executions count, so the hint follows
// a change of upstream speed within seconds of traffic without jumping at
// one outlier.
const durationWeight = 0.2

// defaultRetryHint is the Retry-After of a 409 on an endpoint that has not
// executed anything yet in this instance: short, as most operations take
// well under a second, and never more than the lease left.
const defaultRetryHint = time.Second

// durationEstimate is an exponentially weighted moving average of one
// endpoint's execution times. It is safe for concurrent use.
type durationEstimate struct {
	mu   sync.Mutex
	avg  time.Duration
	seen bool
}

// observe adds one execution time.
func (e *durationEstimate) observe(d time.Duration) {
	if d < 0 {
		d = 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.seen {
		e.avg, e.seen = d, true
		return
	}
	e.avg += time.Duration(durationWeight * float64(d-e.avg))
}

// retryAfter is the wait to suggest to a retry that found an operation in
// flight: the endpoint's typical execution time, rounded up to whole
// seconds and at least one, capped by the time left on the lease (after
// which a retry takes over a dead worker's claim). leaseLeft <= 0 means
// unknown: no cap.
func (e *durationEstimate) retryAfter(leaseLeft time.Duration) time.Duration {
	e.mu.Lock()
	hint, seen := e.avg, e.seen
	e.mu.Unlock()
	if !seen {
		hint = defaultRetryHint
	}
	hint = max(hint, time.Second)
	if r := hint % time.Second; r != 0 {
		hint += time.Second - r
	}
	if leaseLeft > 0 {
		// The lease left, rounded up the same way: a retry that comes back
		// exactly as the lease runs out can take over.
		if r := leaseLeft % time.Second; r != 0 {
			leaseLeft += time.Second - r
		}
		hint = min(hint, leaseLeft)
	}
	return hint
}
