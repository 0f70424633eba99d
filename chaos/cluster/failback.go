package cluster

import (
	"context"
	"time"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/region"
)

// failbackDrain is how long a failback waits for the old owner's in-flight
// work before it fences.
const failbackDrain = 2 * time.Second

// failbackMovers is how many home shards a failback moves at once: the
// failover controller moves a lost region's shards concurrently too, and
// the move under load should take about as long.
const failbackMovers = 8

// failBack moves region's home shards back to it (Active) with the
// product's own repair, failover.Repair.Failback, as an operator's
// `idemctl failback` does: fenced moves, each drained for failbackDrain
// (the old owner records what it already started before the fence
// moves), failbackMovers at a time, audited as the drill's. The caller
// has brought the region back and waited until it is ready.
func failBack(ctx context.Context, dir *ownership.Directory, regions []config.Region, audit failover.Auditor, name string) error {
	topo, err := region.New(name, regions)
	if err != nil {
		return err
	}
	_, err = failover.Repair{Directory: dir, Topology: topo, Audit: audit, DrainTimeout: failbackDrain,
		Concurrency: failbackMovers}.Failback(ctx, name, "drill", "failback after a region fault")
	return err
}

// failback moves region's home shards back to it (failBack), once its
// gateway is ready.
func (r *Regional) failback(ctx context.Context, region string) error {
	d := r.c.Region(region).Daemon
	if err := d.Owners().WaitReady(ctx); err != nil {
		return err
	}
	return failBack(ctx, d.Directory(), r.c.Topology, d.Store(), region)
}

// failback moves region's home shards back to it (failBack).
func (p *Process) failback(ctx context.Context, region string) error {
	regions := make([]config.Region, len(p.regions))
	for i, r := range p.regions {
		regions[i] = config.Region{Name: r.name, URL: "http://" + r.listen}
	}
	return failBack(ctx, p.owners, regions, p.store, region)
}
