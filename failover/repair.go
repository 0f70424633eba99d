package failover

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/ownership"
)

// Repair carries out an operator's moves: a manual failover, a failback, a
// drain, and accepting a failover. Each move is the directory's fenced
// transfer (one epoch step, audited by the fence store in the same SQL
// transaction as the fence bump); each call also writes one audit row
// saying what it did, by whom and why. Repairs take no election: the
// directory's compare-and-swap makes concurrent movers of a shard agree
// on one winner, the controller included.
type Repair struct {
	// Client is the etcd client (Accept writes the shard entry with it).
	// Required for Accept.
	Client *clientv3.Client
	// Directory is the ownership directory. Required.
	Directory *ownership.Directory
	// Topology is the region topology. Required.
	Topology Topology
	// Audit writes the audit row of each call. Required.
	Audit Auditor
	// Healthy filters the regions a failover or drain may move a shard to
	// (Tracker.Healthy after a Refresh). Default: the regions Status says
	// are healthy with a live instance, else every region.
	Healthy func(region string) bool
	// Status returns a region's status now (Current): Failback refuses a
	// region, and Drain refuses to drain one, that is not healthy with a
	// live instance (RegionNotHealthyError). Default: every region
	// healthy.
	Status func(region string) RegionStatus
	// Force makes Failback and Drain go ahead on a region Status does
	// not call healthy; the call's audit row says it was forced and what
	// the region's state was.
	Force bool
	// Clock is the clock of the refusal's message. Default clock.Real().
	Clock clock.Clock
	// Concurrency bounds concurrent moves. Default DefaultMoveConcurrency.
	Concurrency int
	// DrainTimeout is how long each planned move (Drain, Failback) lets
	// the old owner, which is alive, finish the operations it already
	// started before the fence moves (ownership.DrainFor). A failover
	// never drains: the old owner cannot finish anything. Default 0: no
	// waiting. It must be shorter than StuckAfter (CheckDrain).
	DrainTimeout time.Duration
	// HoldTime is the failover controllers' Config.HoldTime, named in a
	// refused failback of a recovering region (when the hold ends).
	// Default: the published View's, else DefaultHoldTime.
	HoldTime time.Duration
	// StuckAfter is the failover controllers' Config.StuckAfter: after it
	// a controller finishes a transfer left FENCING, so a longer
	// DrainTimeout would be cut and is refused. Default
	// DefaultStuckAfter.
	StuckAfter time.Duration
}

// check validates the call's common arguments.
func (r Repair) check(region, operator, reason string) error {
	if strings.TrimSpace(operator) == "" || strings.TrimSpace(reason) == "" {
		return ErrNoOperator
	}
	if r.Directory == nil || r.Topology == nil || r.Audit == nil {
		return fmt.Errorf("%w: Repair needs Directory, Topology and Audit", ErrBadConfig)
	}
	if err := CheckDrain("DrainTimeout", r.DrainTimeout, r.StuckAfter); err != nil {
		return fmt.Errorf("%w: Repair: %w", ErrBadConfig, err)
	}
	if region != "" && !slices.Contains(r.Topology.Names(), region) {
		return fmt.Errorf("%w: %q (regions: %s)", ErrUnknownRegion, region, strings.Join(r.Topology.Names(), ", "))
	}
	return nil
}

func (r Repair) concurrency() int {
	if r.Concurrency > 0 {
		return r.Concurrency
	}
	return DefaultMoveConcurrency
}

// Failover moves every shard region owns to its failover region (its home
// if that is not region and healthy, else the first healthy region in
// the home's successor order), ending FAILED_OVER: what the controller
// does for a failed region, on an operator's word.
func (r Repair) Failover(ctx context.Context, region, operator, reason string) ([]Moved, error) {
	return r.away(ctx, "failover", region, ownership.FailedOver, operator, reason, 0)
}

// Drain moves every shard region owns to its failover region, ending
// ACTIVE: a planned move (maintenance), so reject endpoints keep serving.
func (r Repair) Drain(ctx context.Context, region, operator, reason string) ([]Moved, error) {
	return r.away(ctx, "drain", region, ownership.Active, operator, reason, r.DrainTimeout)
}

// away moves region's shards elsewhere, ending final. A drain refuses a
// region that is not healthy (unless r.Force).
func (r Repair) away(ctx context.Context, action, region string, final ownership.State, operator, reason string, drain time.Duration) ([]Moved, error) {
	if err := r.check(region, operator, reason); err != nil {
		return nil, err
	}
	var forced string
	if action == "drain" {
		var err error
		if forced, err = r.refuse(action, region); err != nil {
			return nil, err
		}
	}
	entries, _, err := r.Directory.List(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.noTarget(ctx, action, region, entries, operator, reason, forced); err != nil {
		return nil, err
	}
	var plans []plan
	var errs []error
	for _, e := range entries {
		if e.Owner != region || e.State == ownership.Fencing {
			continue
		}
		to, err := target(r.Topology, e.Shard, region, r.healthy())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		plans = append(plans, plan{entry: e, to: to, final: final})
	}
	return r.run(ctx, action, region, plans, operator, reason, drain, errs, forced)
}

// noTarget returns, once, the refusal of a failover or drain of region
// when no other region may take its shards (none healthy with a live
// instance), after writing the call's audit row saying why nothing moved;
// nil when some region may. Per-shard errors would say the same thing once
// for every shard.
func (r Repair) noTarget(ctx context.Context, action, region string, entries []ownership.Entry,
	operator, reason, forced string) error {
	healthy := r.healthy()
	if healthy == nil {
		return nil
	}
	var others []string
	for _, name := range r.Topology.Names() {
		if name == region {
			continue
		}
		if healthy(name) {
			return nil
		}
		s := r.status(name)
		others = append(others, fmt.Sprintf("%s %s with %s", name, s.State, liveInstances(s.Instances)))
	}
	owned := 0
	for _, e := range entries {
		if e.Owner == region && e.State != ownership.Fencing {
			owned++
		}
	}
	why := "no other region is healthy with a live instance (" + strings.Join(others, ", ") + ")"
	detail := fmt.Sprintf("region=%s shards_moved=0 of %d: nothing moved, %s", region, owned, why) + forced
	err := fmt.Errorf("%w: %s %s moved none of its %d shards: %s", ErrNoTarget, action, region, owned, why)
	if aerr := r.Audit.Audit(ctx, operator, action, reason, detail); aerr != nil {
		return errors.Join(err, fmt.Errorf("failover: audit %s: %w", action, aerr))
	}
	return err
}

// healthy is the filter of the regions a shard may move to.
func (r Repair) healthy() func(string) bool {
	switch {
	case r.Healthy != nil:
		return r.Healthy
	case r.Status != nil:
		return func(region string) bool { return usable(r.Status(region)) }
	}
	return nil
}

// Failback moves every shard whose home is region and whose owner is not
// back to region, ending ACTIVE. Call it once the region is healthy again
// and, for reject endpoints, after reconciling what it left in flight. It
// refuses, moving nothing, a region that is not healthy with a live
// instance (*RegionNotHealthyError), unless r.Force.
func (r Repair) Failback(ctx context.Context, region, operator, reason string) ([]Moved, error) {
	if err := r.check(region, operator, reason); err != nil {
		return nil, err
	}
	forced, err := r.refuse("failback", region)
	if err != nil {
		return nil, err
	}
	entries, _, err := r.Directory.List(ctx)
	if err != nil {
		return nil, err
	}
	var plans []plan
	for _, e := range entries {
		if r.Topology.Home(e.Shard) == region && (e.Owner != region || e.State != ownership.Active) {
			plans = append(plans, plan{entry: e, to: region, final: ownership.Active})
		}
	}
	return r.run(ctx, "failback", region, plans, operator, reason, r.DrainTimeout, nil, forced)
}

// run makes the moves and writes the call's audit row, which ends with
// forced (what a forced call overrode, or "").
func (r Repair) run(ctx context.Context, action, region string, plans []plan, operator, reason string,
	drain time.Duration, errs []error, forced string) ([]Moved, error) {
	var opts []ownership.MoveOption
	if drain > 0 {
		opts = append(opts, ownership.DrainFor(drain))
	}
	moved, err := runMoves(ctx, r.Directory, plans, operator, reason, r.concurrency(), opts...)
	errs = append(errs, err)
	detail := fmt.Sprintf("region=%s shards_moved=%d of %d", region, committed(moved), len(plans)) + forced
	if aerr := r.Audit.Audit(ctx, operator, action, reason, detail); aerr != nil {
		errs = append(errs, fmt.Errorf("failover: audit %s: %w", action, aerr))
	}
	return moved, errors.Join(errs...)
}
