package admission

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/idemcoord/idemcoord/clock"
)

// Defaults of a FingerprintBudget.
const (
	// DefaultFingerprintBudget is 64 MiB of request bodies being
	// fingerprinted at once: 64 bodies at the default 1 MiB cap, more than
	// two cores keep busy, while the canonicaliser's working memory (a
	// small multiple of the body) stays in the low hundreds of MiB however
	// many clients send large bodies at once.
	DefaultFingerprintBudget = 64 << 20
	// DefaultFingerprintWait is how long a request waits for budget before
	// it is answered 503: long enough to ride out a burst (fingerprinting
	// 1 MiB takes tens of milliseconds), short enough that a client facing
	// an overload hears about it rather than timing out.
	DefaultFingerprintWait = 2 * time.Second
)

var (
	// ErrFingerprintBusy means the budget could not be had in time.
	ErrFingerprintBusy = errors.New("gateway: fingerprint budget exhausted")
)

// FingerprintBudget is a weighted semaphore over the request-body bytes
// being fingerprinted at once. Fingerprinting is the one step whose memory
// grows with the body before anything is claimed, so without a bound a
// burst of large bodies costs memory in proportion to the burst. Waiters
// are served in arrival order, so a large body is not starved by a stream
// of small ones. It is safe for concurrent use; one budget may be shared
// by several gateways of a process.
type FingerprintBudget struct {
	capacity int64
	wait     time.Duration
	clock    clock.Clock

	mu      sync.Mutex
	used    int64
	peak    int64
	waiters []*budgetWaiter
}

// budgetWaiter is one Acquire waiting for n bytes; ready is closed when
// they are granted.
type budgetWaiter struct {
	n       int64
	ready   chan struct{}
	granted bool
}

// NewFingerprintBudget returns a budget of capacity bytes (0 means
// DefaultFingerprintBudget) whose Acquire waits at most wait (0 means
// DefaultFingerprintWait) as measured by c (nil means the real clock).
func NewFingerprintBudget(capacity int64, wait time.Duration, c clock.Clock) *FingerprintBudget {
	if capacity <= 0 {
		capacity = DefaultFingerprintBudget
	}
	if wait <= 0 {
		wait = DefaultFingerprintWait
	}
	return &FingerprintBudget{capacity: capacity, wait: wait, clock: clock.Or(c)}
}

// Acquire takes n bytes of the budget, waiting until they are free, ctx
// ends, or the budget's wait has passed; the last two return an error
// wrapping ErrFingerprintBusy (and ctx's error if it ended). A body larger
// than the whole budget takes all of it, so it runs alone rather than
// never. On success the caller must call release exactly once.
func (b *FingerprintBudget) Acquire(ctx context.Context, n int64) (release func(), err error) {
	if n <= 0 {
		return func() {}, nil
	}
	n = min(n, b.capacity)
	b.mu.Lock()
	if len(b.waiters) == 0 && b.used+n <= b.capacity {
		b.take(n)
		b.mu.Unlock()
		return b.releaser(n), nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()

	t := b.clock.NewTimer(b.wait)
	defer t.Stop()
	var cause error
	select {
	case <-w.ready:
		return b.releaser(n), nil
	case <-ctx.Done():
		cause = ctx.Err()
	case <-t.C():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if w.granted {
		// Granted while giving up: keep it, the work can still be done.
		return b.releaser(n), nil
	}
	for i, x := range b.waiters {
		if x == w {
			b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
			break
		}
	}
	b.grant() // the head may have been waiting behind w
	if cause != nil {
		return nil, errors.Join(ErrFingerprintBusy, cause)
	}
	return nil, ErrFingerprintBusy
}

// InUse returns the bytes held now.
func (b *FingerprintBudget) InUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Peak returns the most bytes ever held at once; it never exceeds the
// capacity.
func (b *FingerprintBudget) Peak() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}

// Waiting returns the number of Acquire calls waiting now.
func (b *FingerprintBudget) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiters)
}

// take holds n bytes; b.mu is held.
func (b *FingerprintBudget) take(n int64) {
	b.used += n
	b.peak = max(b.peak, b.used)
}

// releaser returns the release function of n held bytes.
func (b *FingerprintBudget) releaser(n int64) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.used -= n
			b.grant()
		})
	}
}

// grant hands free bytes to waiters in arrival order; b.mu is held.
func (b *FingerprintBudget) grant() {
	for len(b.waiters) > 0 && b.used+b.waiters[0].n <= b.capacity {
		w := b.waiters[0]
		b.waiters = b.waiters[1:]
		b.take(w.n)
		w.granted = true
		close(w.ready)
	}
}
