package devcluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/daemon"
	"github.com/idemcoord/idemcoord/failover"
)

// Region returns the named region, or nil.
func (c *Cluster) Region(name string) *Region {
	for _, r := range c.Regions {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// StopRegion stops a region's idemd (its liveness key goes with it), as
// if the region were lost: the failover controllers of the other regions
// see it suspect, then failed, and move its shards. StartRegion brings it
// back on the same address.
func (c *Cluster) StopRegion(ctx context.Context, name string) error {
	r := c.Region(name)
	if r == nil {
		return fmt.Errorf("devcluster: no region %q", name)
	}
	if r.Daemon == nil {
		return nil
	}
	err := r.Daemon.Shutdown(ctx)
	r.Daemon = nil
	return err
}

// KillRegion stops a region's idemd abruptly, as a crash would: no drain,
// so the requests it has in flight are cut (their connections closed) and
// their operations stay IN_PROGRESS until their leases lapse and another
// region takes them over, which is what `idemctl op list --region` shows
// and a failover's reconciliation is about. StopRegion is the clean stop.
func (c *Cluster) KillRegion(name string) error {
	r := c.Region(name)
	if r == nil {
		return fmt.Errorf("devcluster: no region %q", name)
	}
	if r.Daemon == nil {
		return nil
	}
	now, cancel := context.WithCancel(context.Background())
	cancel() // no drain
	err := r.Daemon.Shutdown(now)
	r.Daemon = nil
	if errors.Is(err, context.Canceled) {
		return nil // the drain it was not given
	}
	return err
}

// StartRegion starts a stopped region again from its configuration file.
func (c *Cluster) StartRegion(ctx context.Context, name string) error {
	r := c.Region(name)
	if r == nil {
		return fmt.Errorf("devcluster: no region %q", name)
	}
	if r.Daemon != nil {
		return nil
	}
	cfg, err := config.Load(r.ConfigPath)
	if err != nil {
		return err
	}
	ro := c.opts.Region[name]
	if ro.Transport == nil {
		ro.Transport = c.opts.Transport
	}
	d, err := daemon.Start(ctx, cfg, daemon.Options{Logger: c.opts.Logger, Transport: ro.Transport, Migrate: true,
		ForwardTransport: ro.ForwardTransport, Failover: c.opts.FailoverTimings, UnsafeDrillStore: ro.UnsafeDrillStore})
	if err != nil {
		return fmt.Errorf("region %s: %w", name, err)
	}
	r.Daemon = d
	return nil // the others see it recovering, then healthy after the hold time
}

// running returns the first region whose idemd runs.
func (c *Cluster) running() *daemon.Daemon {
	for _, r := range c.Regions {
		if r.Daemon != nil {
			return r.Daemon
		}
	}
	return nil
}

// settleTimeout bounds waiting, at start, for every region to see every
// region healthy.
const settleTimeout = 30 * time.Second

// settle waits until every running region's failover tracker sees every
// region healthy: regions start one after the other, and a region that
// has not registered yet looks suspect to those started before it (their
// gateways would hold its actors' requests until it does).
func (c *Cluster) settle(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	for _, r := range c.Regions {
		if r.Daemon == nil || r.Daemon.Failover() == nil {
			continue
		}
		tr := r.Daemon.Failover().Tracker()
		for {
			states, err := tr.Refresh(ctx)
			healthy := err == nil
			for _, o := range c.Regions {
				healthy = healthy && states[o.Name] == failover.Healthy
			}
			if healthy {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("devcluster: region %s does not see every region healthy: %v (%v)", r.Name, states, err)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}
