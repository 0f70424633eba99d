package async

import "sync"

// Work is the work the gateway owns beyond a request's answer: async runs
// after their 202 and results recorded again after a store error (the
// upstream stage's upstream.Background). The async stage's Close waits
// for it; once Close has begun, nothing new starts. The zero value is
// ready to use.
type Work struct {
	mu      sync.Mutex
	closing bool
	wg      sync.WaitGroup
}

// enter counts one piece of work in, unless Close has begun (false).
func (b *Work) enter() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closing {
		return false
	}
	b.wg.Add(1)
	return true
}

// exit counts one piece of work out.
func (b *Work) exit() { b.wg.Done() }

// Go runs f in a goroutine Close waits for, unless Close has begun: it
// reports false then, and f is not run.
func (b *Work) Go(f func()) bool {
	if !b.enter() {
		return false
	}
	go func() {
		defer b.exit()
		f()
	}()
	return true
}

// stop refuses new work from now on.
func (b *Work) stop() {
	b.mu.Lock()
	b.closing = true
	b.mu.Unlock()
}

// close stops new work and waits for what runs.
func (b *Work) close() {
	b.stop()
	b.wg.Wait()
}

// Closing reports whether Close has begun.
func (b *Work) Closing() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closing
}
