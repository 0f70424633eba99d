// Package lifecycle is the one lifecycle of idemcoord's long-lived
// components (those that own goroutines): the failover controller and its
// tracker, the ownership cache and liveness key, the gateway's background
// loops, and the daemon that wires them.
//
// Each of them has the same four methods (Component):
//
//   - Start(ctx) returns once the component runs, or with why it could
//     not start. The component then runs until ctx ends or Close is
//     called.
//   - Close stops it and waits for its goroutines. It is idempotent, and
//     safe before Start (the component then never starts).
//   - Done is closed once the component has stopped, for whatever reason.
//   - Err says why it stopped: nil while it runs and after a clean Close,
//     ctx's cause when ctx ended, the component's own error when it
//     failed by itself (or could not start).
//
// A component holds a Runner for the mechanics, so none of them
// re-implements done channels, cancellation and waiting.
package lifecycle

import (
	"context"
	"errors"
	"sync"
)

// Component is the lifecycle every long-lived component implements.
type Component interface {
	// Start returns once the component runs; it runs until ctx ends or
	// Close.
	Start(ctx context.Context) error
	// Close stops the component and waits for it; idempotent.
	Close() error
	// Done is closed once the component stopped.
	Done() <-chan struct{}
	// Err is why it stopped: nil while running and after a clean Close.
	Err() error
}

var (
	// ErrStarted is returned by a second Start.
	ErrStarted = errors.New("lifecycle: already started")
	// ErrClosed is returned by Start after Close.
	ErrClosed = errors.New("lifecycle: closed")
)

// Runner runs one component's goroutines under one lifetime and records
// why they stopped. Its zero value is ready to use; it must not be copied
// after first use.
type Runner struct {
	mu       sync.Mutex
	started  bool
	stopping bool  // Stop or Close was called, ctx ended, or a goroutine returned
	ended    bool  // done is closed
	cause    error // why it stops, kept from the first Stop; nil for Close
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	done     chan struct{}
	err      error // cause, published when done closes
}

// doneLocked returns the done channel, making it on first use; r.mu is
// held.
func (r *Runner) doneLocked() chan struct{} {
	if r.done == nil {
		r.done = make(chan struct{})
	}
	return r.done
}

// Start begins the lifetime, a context that ends when ctx ends or the
// Runner stops. It calls setup with it (synchronously: a component's
// Start returns once setup did), then runs each of runs in a goroutine of
// its own. A run must return once the lifetime's context ends; a run that
// returns before that (an error, or nil when its work is over) stops the
// whole component with that as Err. When setup fails, the component
// stops with its error and Start returns it. Start returns ErrStarted
// after an earlier Start and ErrClosed after Close.
func (r *Runner) Start(ctx context.Context, setup func(ctx context.Context) error, runs ...func(ctx context.Context) error) error {
	r.mu.Lock()
	done := r.doneLocked()
	switch {
	case r.started:
		r.mu.Unlock()
		return ErrStarted
	case r.stopping:
		r.mu.Unlock()
		return ErrClosed
	}
	r.started = true
	lctx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	r.wg.Add(1) // held by setup, so done cannot close before the runs start
	r.mu.Unlock()

	stopOnCtx := context.AfterFunc(ctx, func() { r.Stop(context.Cause(ctx)) })
	go func() {
		r.wg.Wait()
		stopOnCtx()
		cancel()
		r.mu.Lock()
		r.stopping, r.ended = true, true
		r.err = r.cause
		r.mu.Unlock()
		close(done)
	}()
	var err error
	if setup != nil {
		err = setup(lctx)
	}
	if err != nil {
		r.Stop(err)
		r.wg.Done()
		<-done
		return err
	}
	for _, run := range runs {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			err := run(lctx)
			if ctx.Err() != nil {
				err = context.Cause(ctx) // the run saw ctx end before AfterFunc's Stop did
			}
			r.Stop(err) // a no-op once stopping: the first cause stays
		}()
	}
	r.wg.Done()
	return nil
}

// Stop begins stopping the component with cause as Err (nil: a clean
// stop, as Close), unless it is already stopping; it does not wait.
func (r *Runner) Stop(cause error) {
	r.mu.Lock()
	if !r.stopping {
		r.stopping, r.cause = true, cause
	}
	cancel := r.cancel
	r.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// Close stops the component cleanly (Err nil, unless it had already
// stopped for another reason), waits until it has stopped, and returns
// Err. Before Start it marks the Runner stopped: Done is closed and a
// later Start returns ErrClosed. It is idempotent.
func (r *Runner) Close() error {
	r.mu.Lock()
	done := r.doneLocked()
	if !r.started {
		r.stopping = true
		if !r.ended {
			r.ended = true
			close(done)
		}
		r.mu.Unlock()
		return nil
	}
	r.mu.Unlock()
	r.Stop(nil)
	<-done
	return r.Err()
}

// Stopping reports whether the component is stopping or stopped.
func (r *Runner) Stopping() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopping
}

// Done is closed once every goroutine of the lifetime has returned (or
// Close was called before Start).
func (r *Runner) Done() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.doneLocked()
}

// Err returns nil until Done is closed, then why the component stopped:
// nil after Close, ctx's cause when the context given to Start ended, a
// run's or setup's error when it failed by itself.
func (r *Runner) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// StartBounded starts c to run for lifetime, but gives up the start when
// ctx ends before it completed: it closes c and returns ctx's cause. It
// is for an owner that starts a component within a start deadline of its
// own, and stops it itself later (the daemon).
func StartBounded(ctx, lifetime context.Context, c Component) error {
	stop := context.AfterFunc(ctx, func() { c.Close() })
	err := c.Start(lifetime)
	if !stop() {
		<-c.Done()
		if err == nil {
			err = context.Cause(ctx)
		}
	}
	return err
}
