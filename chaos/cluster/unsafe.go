package cluster

import (
	"context"
	"fmt"
	"slices"

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

// UnsafeModes lists the unsafe modes UnsafeStore knows, for help texts
// and errors.
func UnsafeModes() []string { return []string{UnsafeRegionLocalClaims} }

// UnsafeStore returns the daemon.Options.UnsafeDrillStore wrapper that
// puts region's coordinator in unsafe mode, or ErrUnknownUnsafe naming
// the known modes. Drills only: the in-process cluster and the drill
// build of idemd (-tags drill) call it; nothing else may.
func UnsafeStore(mode, region string) (func(gateway.Store) gateway.Store, error) {
	if !slices.Contains(UnsafeModes(), mode) {
		return nil, fmt.Errorf("%w %q (known: %q)", ErrUnknownUnsafe, mode, UnsafeModes())
	}
	return regionLocal(region), nil
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
