package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/fencing"
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
// has brought the region back and waited until it is ready. A shard the
// failover controller is still moving away (a region back before its
// failover ended) is a move conflict; the next pass reads it again, as an
// operator would run the failback again.
func failBack(ctx context.Context, dir *ownership.Directory, regions []config.Region, audit failover.Auditor, name string) error {
	topo, err := region.New(name, regions)
	if err != nil {
		return err
	}
	r := failover.Repair{Directory: dir, Topology: topo, Audit: audit, DrainTimeout: failbackDrain,
		Concurrency: failbackMovers}
	for {
		_, err := r.Failback(ctx, name, "drill", "failback after a region fault")
		if err == nil || !errors.Is(err, fencing.ErrMoveConflict) {
			return err
		}
		if serr := clock.Sleep(ctx, clock.Real(), failbackRetry); serr != nil {
			return errors.Join(err, serr)
		}
	}
}

// failbackRetry is the pause before a failback pass that met a move
// conflict runs again.
const failbackRetry = 100 * time.Millisecond

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
