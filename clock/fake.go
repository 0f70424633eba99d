package clock

import (
	"sync"
	"time"
)

// Fake is a Clock that moves only when told to. Timers and tickers fire
// (without blocking, like the runtime's: a full channel drops the tick)
// when Advance or Set passes their deadline. It is safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []*fakeWaiter
	changed chan struct{} // closed and replaced whenever a waiter is added
}

var _ Clock = (*Fake)(nil)

// NewFake returns a fake clock reading start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, changed: make(chan struct{})}
}

type fakeWaiter struct {
	f      *Fake
	c      chan time.Time
	at     time.Time
	period time.Duration // 0 for a timer
	active bool
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Advance moves the clock forward by d and fires what falls due.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	t := f.now.Add(d)
	f.mu.Unlock()
	f.Set(t)
}

// Set moves the clock to t (never backwards: an earlier t is ignored, as
// timers cannot un-fire) and fires what falls due, in deadline order.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.Before(f.now) {
		return
	}
	for {
		var next *fakeWaiter
		for _, w := range f.waiters {
			if w.active && !w.at.After(t) && (next == nil || w.at.Before(next.at)) {
				next = w
			}
		}
		if next == nil {
			break
		}
		f.now = next.at
		select {
		case next.c <- next.at:
		default:
		}
		if next.period > 0 {
			next.at = next.at.Add(next.period)
		} else {
			next.active = false
		}
	}
	f.now = t
	f.prune()
}

// prune drops inactive waiters; f.mu is held.
func (f *Fake) prune() {
	kept := f.waiters[:0]
	for _, w := range f.waiters {
		if w.active {
			kept = append(kept, w)
		}
	}
	clear(f.waiters[len(kept):])
	f.waiters = kept
}

// Waiters returns how many timers and tickers are pending: a test waits
// for the code under test to be blocked on the clock before advancing it.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, w := range f.waiters {
		if w.active {
			n++
		}
	}
	return n
}

// BlockUntil waits until at least n timers or tickers are pending. It
// waits on the clock's own signal, not on wall time.
func (f *Fake) BlockUntil(n int) {
	for {
		f.mu.Lock()
		count := 0
		for _, w := range f.waiters {
			if w.active {
				count++
			}
		}
		ch := f.changed
		f.mu.Unlock()
		if count >= n {
			return
		}
		<-ch
	}
}

func (f *Fake) add(d, period time.Duration) *fakeWaiter {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := &fakeWaiter{f: f, c: make(chan time.Time, 1), at: f.now.Add(d), period: period, active: true}
	if d <= 0 && period == 0 {
		w.c <- f.now
		w.active = false
		return w
	}
	f.waiters = append(f.waiters, w)
	close(f.changed)
	f.changed = make(chan struct{})
	return w
}

// NewTimer returns a timer that fires when the clock reaches now+d.
func (f *Fake) NewTimer(d time.Duration) Timer { return (*fakeTimer)(f.add(d, 0)) }

// NewTicker returns a ticker firing every d of fake time.
func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	return (*fakeTicker)(f.add(d, d))
}

type fakeTimer fakeWaiter

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	was := t.active
	t.active = false
	return was
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.f.mu.Lock()
	was := t.active
	t.at, t.active = t.f.now.Add(d), true
	if !was {
		t.f.waiters = append(t.f.waiters, (*fakeWaiter)(t))
	}
	close(t.f.changed)
	t.f.changed = make(chan struct{})
	t.f.mu.Unlock()
	return was
}

type fakeTicker fakeWaiter

func (t *fakeTicker) C() <-chan time.Time { return t.c }

func (t *fakeTicker) Stop() {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	t.active = false
}

func (t *fakeTicker) Reset(d time.Duration) {
	t.f.mu.Lock()
	was := t.active
	t.period, t.at, t.active = d, t.f.now.Add(d), true
	if !was {
		t.f.waiters = append(t.f.waiters, (*fakeWaiter)(t))
	}
	close(t.f.changed)
	t.f.changed = make(chan struct{})
	t.f.mu.Unlock()
}
