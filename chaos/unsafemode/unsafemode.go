// Package unsafemode breaks the coordinator on purpose, for drills only:
// each mode wraps the store a gateway uses so that the checker must report
// violations. The in-process drill cluster and the drill build of idemd
// (-tags drill) use it; it is apart from chaos/cluster so that the drill
// build links this file's worth of the harness, not the harness.
package unsafemode

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// RegionLocalClaims is the mode that breaks the coordinator's global
// uniqueness: each region's gateway claims keys in a space of its own
// (regionLocalStore), as a coordinator that deduplicates only within a
// region would. The checker must then report the second effects a
// failover, a failback or a cross-region retry brings.
const RegionLocalClaims = "region-local-claims"

// SkewedExpiry is the mode of a coordinator that
// trusts a clock running ahead by more than the endpoint's TTL: every
// finished record its claim finds (COMPLETED or TERMINAL_FAILURE) looks
// past its TTL, so the claim deletes it, as the cleanup deletes expired
// records, and claims the key afresh under a new operation id. Drills
// only: a retry of an acknowledged intent (the workload's duplicate_retry)
// then runs the intent a second time, and the payments service, whose
// last line of defence is the operation id, creates a second payment and
// the bank a second charge; the checker must report I1 and I2.
const SkewedExpiry = "skewed-expiry"

var (
	// ErrUnknown is returned by Wrap for a mode it does not know.
	ErrUnknown = errors.New("unknown unsafe mode")
	// errUnsafeNeedsSQL is returned by a skewed-expiry claim whose store
	// cannot run a transaction of its own (not a *sqlstore.Store).
	errUnsafeNeedsSQL = errors.New("unsafemode: skewed-expiry needs a store with RunTx")
)

// Modes lists the unsafe modes Wrap knows, for help texts and errors.
func Modes() []string { return []string{RegionLocalClaims, SkewedExpiry} }

// Wrap returns the daemon.Options.UnsafeDrillStore wrapper that puts
// region's coordinator in unsafe mode, or ErrUnknown naming the known
// modes. Drills only: the in-process cluster and the drill
// build of idemd (-tags drill) call it; nothing else may.
func Wrap(mode, region string) (func(store.Store) store.Store, error) {
	switch mode {
	case RegionLocalClaims:
		return func(s store.Store) store.Store { return regionLocalStore{Store: s, region: region} }, nil
	case SkewedExpiry:
		return func(s store.Store) store.Store { return skewedExpiryStore{Store: s} }, nil
	}
	return nil, fmt.Errorf("%w %q (known: %q)", ErrUnknown, mode, Modes())
}

// regionLocalStore is the coordinator with its claims region-local
// (RegionLocalClaims). Each key a gateway claims is stored under a
// name of its region's, so a key claimed in one region is new to every
// other: the global uniqueness of a claim, which makes a failover, a
// failback or a cross-region retry find the first run, is gone.
// Everything else (fencing, leases, replays within a region, the async
// queue and its recovery, cancel) is the real store's: the wrapper embeds
// the whole store.Store, so no capability is switched off.
type regionLocalStore struct {
	store.Store
	region string
}

// Begin implements store.Store: it claims the key in the region's own
// space.
func (u regionLocalStore) Begin(ctx context.Context, req store.ClaimRequest) (store.Claim, error) {
	req.Scope.Key = idempotency.Key(string(req.Scope.Key) + "~" + u.region)
	return u.Store.Begin(ctx, req)
}

var (
	_ store.Store = regionLocalStore{}
	_ store.Store = skewedExpiryStore{}
)

// txRunner is the part of *sqlstore.Store a skewed-expiry claim uses to
// delete a record.
type txRunner interface {
	RunTx(ctx context.Context, fn func(pgx.Tx) error) error
}

// skewedExpiryStore is the coordinator whose clock runs past every TTL
// (SkewedExpiry). Everything but the claim of a finished key is the
// real store's (the whole store.Store is embedded). Forgetting a record
// is no capability of the store contract, so the wrapper needs the SQL
// store's own transactions for it, and says so (errUnsafeNeedsSQL)
// rather than claim as the real store would.
type skewedExpiryStore struct {
	store.Store
}

// Begin implements store.Store: a claim that finds a finished record
// deletes it as expired and claims again, which inserts a new operation.
func (u skewedExpiryStore) Begin(ctx context.Context, req store.ClaimRequest) (store.Claim, error) {
	c, err := u.Store.Begin(ctx, req)
	if err != nil || (c.Outcome != store.Replayed && c.Outcome != store.Mismatch) || !finished(c.Record.State) {
		return c, err
	}
	tx, ok := u.Store.(txRunner)
	if !ok {
		return store.Claim{}, errUnsafeNeedsSQL
	}
	rec := c.Record
	err = tx.RunTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM idempotency_records WHERE shard = $1 AND actor_scope = $2
			AND endpoint = $3 AND key_hash = $4 AND operation_id = $5 AND version = $6`,
			rec.Token.Shard, req.Scope.Actor, req.Scope.Endpoint, rec.KeyHash[:], rec.OperationID, rec.Version)
		return err
	})
	if err != nil {
		return c, nil // could not forget it: the honest answer
	}
	return u.Store.Begin(ctx, req)
}

// finished reports whether a record in st is what a cleanup deletes once
// its TTL passed.
func finished(st idempotency.State) bool {
	return st == idempotency.Completed || st == idempotency.TerminalFailure
}
