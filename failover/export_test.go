package failover

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// LastGuard returns the guard of the controller's current or last term.
func (c *Controller) LastGuard() clientv3.Cmp {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.guard
}

// FailRegion runs one region failover under guard, as a leading
// controller's pass does.
func (c *Controller) FailRegion(ctx context.Context, guard clientv3.Cmp, region string, states map[string]RegionState) ([]Moved, error) {
	return c.failRegion(ctx, guard, region, states)
}
