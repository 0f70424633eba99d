package devcluster

import (
	"context"
	"fmt"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/daemon"
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
	err := r.Daemon.Close(ctx)
	r.Daemon = nil
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
	return nil
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
