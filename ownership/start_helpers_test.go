package ownership_test

import (
	"context"

	"github.com/idemcoord/idemcoord/ownership"
)

// startLiveness creates and starts a liveness key that runs until ctx
// ends or it is closed.
func startLiveness(ctx context.Context, cfg ownership.LivenessConfig) (*ownership.Liveness, error) {
	l, err := ownership.NewLiveness(cfg)
	if err != nil {
		return nil, err
	}
	if err := l.Start(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// openCache creates and starts a cache that watches until ctx ends or it
// is closed.
func openCache(ctx context.Context, cfg ownership.CacheConfig) (*ownership.Cache, error) {
	c, err := ownership.NewCache(cfg)
	if err != nil {
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	return c, nil
}
