package gateway

import (
	"context"
	"fmt"

	"github.com/idemcoord/idemcoord/store"
)

// fenceLister is the part of a store the single-region start check reads
// (sqlstore.Store has it). A store without it is not checked.
type fenceLister interface {
	Fences(ctx context.Context) ([]store.FenceRow, error)
}

// checkFences refuses to start a single-region gateway (no Owners) whose
// store gives its region nothing to serve: every request would be 503
// region-unavailable, "retry with the same key", forever. That happens to
// an embedder who opens a fresh store and wraps a handler without giving
// the shards an owner, the step idemd run takes at its start
// (BootstrapFences); the error names it. A multi-region gateway is not
// checked: its ownership directory bootstraps the fences and moves them.
func (g *Gateway) checkFences(ctx context.Context) error {
	if g.cfg.Owners != nil {
		return nil
	}
	fl, ok := g.fenceLister, g.fenceLister != nil
	if !ok {
		return nil
	}
	rows, err := fl.Fences(ctx)
	if err != nil {
		return fmt.Errorf("gateway: start: read the store's shard fences: %w", err)
	}
	step := fmt.Sprintf("call the store's BootstrapFences(ctx, %d, func(int) string { return %q }) before Start "+
		"(idemd run does it at its start)", g.cfg.Shards, g.cfg.Region)
	switch owned := ownedBy(rows, g.cfg.Region); {
	case len(rows) == 0:
		return fmt.Errorf("gateway: start: the store's shard fences were never bootstrapped, so region %q owns "+
			"no actor and would answer every request 503 region-unavailable: %s: %w", g.cfg.Region, step, store.ErrNotBootstrapped)
	case len(rows) != g.cfg.Shards:
		return fmt.Errorf("gateway: start: %w", &store.ShardCountMismatchError{Store: len(rows), Configured: g.cfg.Shards})
	case owned == 0:
		return fmt.Errorf("gateway: start: region %q owns none of the store's %d shards (they belong to %q), so it "+
			"would answer every request 503 region-unavailable: run it as a region of that cluster (Owners), or on a store of its own",
			g.cfg.Region, len(rows), rows[0].Owner)
	}
	return nil
}

// ownedBy counts the fences rows gives region.
func ownedBy(rows []store.FenceRow, region string) int {
	n := 0
	for _, r := range rows {
		if r.Owner == region {
			n++
		}
	}
	return n
}
