package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idemcoord/idemcoord/internal/lifecycle"
)

// etcdCloseGrace is how long Shutdown lets the etcd watches end by
// themselves before it closes the etcd client under them (which an etcd
// that does not answer requires).
const etcdCloseGrace = 2 * time.Second

// Close is Shutdown with the configuration's drain_timeout as the drain
// deadline. It is idempotent and safe before Start.
func (d *Daemon) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), d.cfg.DrainTimeout)
	defer cancel()
	return d.Shutdown(ctx)
}

// Shutdown drains and stops the daemon: it stops accepting connections
// (a new request is refused at connect), lets in-flight requests finish
// and record their results until ctx ends (the drain timeout; requests
// still running then have their connections closed, and their leases
// lapse to a takeover), waits for background executions, stops the
// failover controller and the cleanup and gauge loops, marks the instance
// as left and revokes its liveness lease (the region's last instance
// leaving fails the region over at once), stops the ownership cache and
// closes the store. It returns the drain's and the telemetry flush's
// errors; once it returned, Done is closed. Calls after the first wait
// for it and return its result.
func (d *Daemon) Shutdown(ctx context.Context) error {
	d.run.Stop(nil)
	err := d.shutdown(ctx)
	d.run.Close()
	return err
}

// shutdown stops the parts once, in the order the Daemon's doc gives.
func (d *Daemon) shutdown(ctx context.Context) error {
	d.shutdownOnce.Do(func() { d.shutdownErr = d.stopParts(ctx) })
	return d.shutdownErr
}

func (d *Daemon) stopParts(ctx context.Context) error {
	var errs []error
	if d.srv != nil {
		if err := d.srv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("daemon: drain: %w", err))
			d.srv.Close()
		}
		<-d.served
	}
	if d.gw != nil {
		d.gw.Close()
	}
	if d.notes != nil {
		d.notes.Close() // the gateway notes nothing more: write what it noted
	}
	// The controller's and the cache's watches end when they are closed,
	// except against an etcd that does not answer: there the etcd client
	// holds them until it is closed. So they stop in the background, the
	// etcd client is closed after a grace period, and then they are
	// waited for.
	var watchers []<-chan struct{}
	if d.ctl != nil {
		watchers = append(watchers, closeAsync(d.ctl))
	}
	if d.bg != nil {
		d.bg.Close()
	}
	if d.live != nil {
		// A clean shutdown hands over at once: the left marker tells the
		// other regions' trackers that this instance is gone on purpose,
		// so when it was its region's last one they fail the region
		// without waiting the confirmation delay (and nobody waits a
		// liveness TTL: the lease is revoked). Both steps are bounded by
		// the register timeout.
		d.live.Leave()
	}
	if d.cache != nil {
		watchers = append(watchers, closeAsync(d.cache))
	}
	grace := time.After(etcdCloseGrace)
	for _, w := range watchers {
		select {
		case <-w:
		case <-grace:
		}
	}
	if d.etcd != nil {
		d.etcd.Close()
	}
	for _, w := range watchers {
		<-w
	}
	if d.store != nil {
		d.store.Close()
	}
	if d.tel != nil {
		// Flushing the last spans gets a moment of its own after a drain
		// that used all of ctx.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		errs = append(errs, d.tel.shutdown(fctx))
		cancel()
	}
	return errors.Join(errs...)
}

// closeAsync closes c in the background and returns a channel closed once
// it has stopped.
func closeAsync(c lifecycle.Component) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Close()
	}()
	return done
}
