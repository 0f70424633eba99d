package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/idemcoord/idemcoord/ownership"
)

// moveOperator and moveReason are what a drill's own move records in the
// fence audit.
const (
	moveOperator = "drill"
	moveReason   = "drill probe: planned move under load"
)

var (
	_ Mover = (*Process)(nil)
	_ Mover = (*Regional)(nil)
)

// MoveShard implements Mover through the drill's own directory client.
func (p *Process) MoveShard(ctx context.Context, shard int, to string, drain time.Duration) error {
	if _, err := p.region(to); err != nil {
		return err
	}
	_, err := p.owners.Move(ctx, shard, to, ownership.Active, moveOperator, moveReason, ownership.DrainFor(drain))
	return err
}

// MoveShard implements Mover through the directory of region to's daemon,
// which must be running.
func (r *Regional) MoveShard(ctx context.Context, shard int, to string, drain time.Duration) error {
	reg := r.c.Region(to)
	if reg == nil || reg.Daemon == nil {
		return fmt.Errorf("cluster: move shard %d to %q: no running region of that name", shard, to)
	}
	_, err := reg.Daemon.Directory().Move(ctx, shard, to, ownership.Active, moveOperator, moveReason, ownership.DrainFor(drain))
	return err
}
