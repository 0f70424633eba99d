package failover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idemcoord/idemcoord/ownership"
)

// Selection picks the shards Accept applies to: one shard, or every shard
// whose home is a region (the shards that failed over away from it).
type Selection struct {
	// Shard selects one shard when Region is "".
	Shard int
	// Region selects every FAILED_OVER shard whose home region it is.
	Region string
}

// ShardSelection selects one shard.
func ShardSelection(shard int) Selection { return Selection{Shard: shard} }

// RegionSelection selects the shards whose home is region.
func RegionSelection(region string) Selection { return Selection{Shard: -1, Region: region} }

// Accept marks the selected FAILED_OVER shards ACTIVE without changing
// their owner or epoch: the operator has reconciled what the dead region
// left in flight and accepts the new owner, so reject endpoints serve
// again. Shards already ACTIVE are skipped (not an error); a FENCING
// shard is ErrNotFailedOver.
//
// The audit row is written before the change, so no accept is ever
// unaudited (a failed accept leaves a row saying it was requested). The
// change is a compare-and-swap on the shard key's mod revision: a shard
// that moved since it was read is left alone and reported as a conflict.
func (r Repair) Accept(ctx context.Context, sel Selection, operator, reason string) ([]Moved, error) {
	if err := r.check(sel.Region, operator, reason); err != nil {
		return nil, err
	}
	if r.Client == nil {
		return nil, fmt.Errorf("%w: Accept needs Client", ErrBadConfig)
	}
	var entries []ownership.Entry
	if sel.Region == "" {
		e, err := r.Directory.Get(ctx, sel.Shard)
		if err != nil {
			return nil, err
		}
		entries = []ownership.Entry{e}
	} else {
		all, _, err := r.Directory.List(ctx)
		if err != nil {
			return nil, err
		}
		for _, e := range all {
			if r.Topology.Home(e.Shard) == sel.Region {
				entries = append(entries, e)
			}
		}
	}
	var out []Moved
	var errs []error
	for _, e := range entries {
		switch e.State {
		case ownership.Active:
			continue
		case ownership.Fencing:
			if sel.Region == "" {
				errs = append(errs, fmt.Errorf("%w: shard %d is FENCING", ErrNotFailedOver, e.Shard))
			}
			continue
		}
		m := Moved{Shard: e.Shard, From: e.Owner, FromEpoch: e.Epoch}
		if err := r.accept(ctx, e, operator, reason); err != nil {
			errs = append(errs, err)
			m.Err = err.Error()
		} else {
			m.To, m.Epoch, m.State = e.Owner, e.Epoch, ownership.Active
		}
		out = append(out, m)
	}
	return out, errors.Join(errs...)
}

// accept audits, then swaps e (FAILED_OVER) for the same owner and epoch
// ACTIVE.
func (r Repair) accept(ctx context.Context, e ownership.Entry, operator, reason string) error {
	detail := fmt.Sprintf("shard=%d epoch=%d owner=%q FAILED_OVER->ACTIVE", e.Shard, e.Epoch, e.Owner)
	if err := r.Audit.Audit(ctx, operator, "failover_accept", reason, detail); err != nil {
		return fmt.Errorf("failover: audit accept of shard %d: %w", e.Shard, err)
	}
	value, err := json.Marshal(ownership.Entry{Owner: e.Owner, Epoch: e.Epoch, State: ownership.Active})
	if err != nil {
		return err
	}
	// The key layout is the directory's (doc.go of package ownership:
	// shards/NNNNN under its prefix).
	key := fmt.Sprintf("%sshards/%05d", r.Directory.Prefix(), e.Shard)
	resp, err := r.Client.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", e.ModRevision)).
		Then(clientv3.OpPut(key, string(value))).Commit()
	if err != nil {
		return fmt.Errorf("failover: accept shard %d: %w", e.Shard, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: shard %d changed since it was read; read it again", ErrConflict, e.Shard)
	}
	return nil
}
