package failover

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/idemcoord/idemcoord/ownership"
)

// Moved is the outcome of one shard move.
type Moved struct {
	// Shard is the shard number.
	Shard int `json:"shard"`
	// From and FromEpoch are the owner and epoch it was moved from.
	From      string `json:"from"`
	FromEpoch int64  `json:"from_epoch"`
	// To, Epoch and State are what it holds after the move (zero when the
	// move failed).
	To    string          `json:"to"`
	Epoch int64           `json:"epoch"`
	State ownership.State `json:"state"`
	// Err is why the move failed ("" when it committed).
	Err string `json:"error,omitempty"`
}

// plan is one move to make: entry (as read) to region to, ending final.
type plan struct {
	entry ownership.Entry
	to    string
	final ownership.State
}

// target returns where a shard leaving region goes: its home if the home
// is not the region being left and is healthy, else the first healthy
// region in its home's successor order other than the one being left. For
// the usual shard (home = owner = the failed region) that is the next
// healthy region in the successor order. healthy nil accepts every region.
func target(topo Topology, shard int, leaving string, healthy func(string) bool) (string, error) {
	home := topo.Home(shard)
	succ, err := topo.Successors(home)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrUnknownRegion, err)
	}
	for _, r := range slices.Concat([]string{home}, succ) {
		if r != leaving && (healthy == nil || healthy(r)) {
			return r, nil
		}
	}
	return "", fmt.Errorf("%w: shard %d (home %s) leaving %s", ErrNoTarget, shard, home, leaving)
}

// finishPlan returns the plan that completes an interrupted transfer.
func finishPlan(e ownership.Entry) plan {
	return plan{entry: e, to: e.Owner, final: e.Transfer.Final}
}

// runMoves makes the moves, at most concurrency at a time, each only from
// the entry it was planned on (ownership.MoveBatch: from its epoch and mod
// revision, the etcd steps batched) and with opts. It returns one Moved
// per plan, in order, and every failure joined. Once a move fails its
// guard (ownership.ErrGuardFailed: the mover was deposed) the remaining
// moves are not tried.
func runMoves(ctx context.Context, dir *ownership.Directory, plans []plan, operator, reason string,
	concurrency int, opts ...ownership.MoveOption) ([]Moved, error) {
	planned := make([]ownership.Planned, len(plans))
	out := make([]Moved, len(plans))
	for i, p := range plans {
		from, fromOwner := p.entry.Epoch, p.entry.Owner
		if p.entry.Transfer != nil {
			from, fromOwner = p.entry.Transfer.FromEpoch, p.entry.Transfer.FromOwner
		}
		out[i] = Moved{Shard: p.entry.Shard, From: fromOwner, FromEpoch: from}
		planned[i] = ownership.Planned{Entry: p.entry, To: p.to, Final: p.final}
	}
	got, errs := dir.MoveBatch(ctx, planned, operator, reason, concurrency, opts...)
	var failed []error
	for i, err := range errs {
		if err != nil {
			failed = append(failed, fmt.Errorf("shard %d: %w", plans[i].entry.Shard, err))
			out[i].Err = err.Error()
			continue
		}
		out[i].To, out[i].Epoch, out[i].State = got[i].Owner, got[i].Epoch, got[i].State
	}
	return out, errors.Join(failed...)
}

// committed counts the moves that succeeded.
func committed(ms []Moved) int {
	n := 0
	for _, m := range ms {
		if m.Err == "" {
			n++
		}
	}
	return n
}
