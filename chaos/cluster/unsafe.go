package cluster

import (
	"context"

	"github.com/idemcoord/idemcoord/crdb"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/idempotency"
)

// unsafeStore is the coordinator with one safety removed, for drills
// only (UnsafeRegionLocalClaims): its claims are region-local. Each key a
// gateway claims is stored under a name of its region's, so a key claimed
// in one region is new to every other: the global uniqueness of a claim,
// which makes a failover, a failback or a cross-region retry find the
// first run, is gone. Everything else (fencing, leases, replays within a
// region) is the real store's.
type unsafeStore struct {
	gateway.Store
	region string
}

// regionLocal returns the daemon.Options.UnsafeDrillStore wrapper of
// region.
func regionLocal(region string) func(gateway.Store) gateway.Store {
	return func(s gateway.Store) gateway.Store { return unsafeStore{Store: s, region: region} }
}

// Begin implements gateway.Store: it claims the key in the region's own
// space.
func (u unsafeStore) Begin(ctx context.Context, req crdb.ClaimRequest) (crdb.Claim, error) {
	req.Scope.Key = idempotency.Key(string(req.Scope.Key) + "~" + u.region)
	return u.Store.Begin(ctx, req)
}
