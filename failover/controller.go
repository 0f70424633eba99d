package failover

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/internal/lifecycle"
	"github.com/idemcoord/idemcoord/internal/retry"
	"github.com/idemcoord/idemcoord/ownership"
)

// Controller is one candidate for the failover controller. Every instance
// may run one; an etcd election makes at most one lead at a time. While it
// leads, it moves every shard of each failed region to its failover
// region in state FAILED_OVER (one epoch step per shard, audited).
//
// Leadership is never trusted on its own: Election.Campaign can return
// after the session's lease expired and Session.Done can fire late, so
// every etcd write the controller makes carries
// CreateRevision(election key) = the revision it won with
// (ownership.Guard). A controller that was paused past its lease, and
// whose key etcd therefore deleted, has every write refused
// (ownership.ErrGuardFailed) and changes nothing: that trades a wasted
// pass for never having two controllers move the same shard.
type Controller struct {
	cfg     Config
	tracker *Tracker
	metrics *metrics

	mu      sync.Mutex
	leading bool
	guard   clientv3.Cmp // of the current or last term
	term    int64        // election revision of the current or last term

	stuck stuckTransfers // FENCING entries seen by this leader, and since when
	last  published      // the view last published (view.go)

	run lifecycle.Runner
}

var _ lifecycle.Component = (*Controller)(nil)

// NewController validates cfg and returns a controller; Start starts it.
func NewController(cfg Config) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	t, err := NewTracker(cfg)
	if err != nil {
		return nil, err
	}
	c := &Controller{cfg: cfg, tracker: t}
	c.metrics = newMetrics(cfg.Meter, t)
	return c, nil
}

// electionKey is the election's prefix under the directory prefix.
func electionKey(prefix string) string { return prefix + "failover/leader" }

// Tracker returns the controller's region tracker, whose states every
// candidate keeps current, leading or not.
func (c *Controller) Tracker() *Tracker { return c.tracker }

// States returns every region's liveness state (Tracker.States).
func (c *Controller) States() map[string]RegionState { return c.tracker.States() }

// Leading reports whether the controller believes it leads. A hint for
// /readyz and metrics only: writes rely on the guard, not on this.
func (c *Controller) Leading() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leading
}

// Start starts the controller's tracker and its campaign loop, and
// returns at once: it tracks the regions and campaigns, leading whenever
// elected, until ctx ends or Close. It can be called once.
func (c *Controller) Start(ctx context.Context) error {
	return c.run.Start(ctx, c.tracker.Start, c.campaign)
}

// Close stops the controller (resigning if it leads) and its tracker, and
// waits for them. It is idempotent and returns Err.
func (c *Controller) Close() error { return c.run.Close() }

// Done is closed once the controller has stopped.
func (c *Controller) Done() <-chan struct{} { return c.run.Done() }

// Err returns nil while the controller runs and after Close, then why it
// stopped: the cause of the context given to Start when that ended.
func (c *Controller) Err() error { return c.run.Err() }

// campaign campaigns and leads whenever elected, one term after another,
// until ctx ends; then it stops the tracker.
func (c *Controller) campaign(ctx context.Context) error {
	defer c.tracker.Close()
	backoff := retry.Backoff{Min: DefaultRetryBackoff, Clock: c.cfg.Clock}
	for ctx.Err() == nil {
		if err := c.term1(ctx); err != nil && ctx.Err() == nil {
			c.cfg.Logger.Warn("failover controller term ended", "name", c.cfg.Name, "err", err)
			backoff.Wait(ctx)
		}
	}
	return ctx.Err()
}

// term1 runs one session: campaign, then lead until the session or the
// guard is lost.
func (c *Controller) term1(ctx context.Context) error {
	s, err := concurrency.NewSession(c.cfg.Client, concurrency.WithTTL(int(c.cfg.ElectionTTL/time.Second)),
		concurrency.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("failover: election session: %w", err)
	}
	defer s.Close()
	e := concurrency.NewElection(s, electionKey(c.cfg.Prefix))
	if err := e.Campaign(ctx, c.cfg.Name); err != nil {
		return fmt.Errorf("failover: campaign: %w", err)
	}
	guard := clientv3.Compare(clientv3.CreateRevision(e.Key()), "=", e.Rev())
	c.stuck.reset()
	c.setLeading(true, guard, e.Rev())
	defer c.setLeading(false, guard, e.Rev())
	c.cfg.Logger.Info("failover controller leads", "name", c.cfg.Name, "term", e.Rev())
	err = c.lead(ctx, s, guard)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	e.Resign(rctx)
	return err
}

func (c *Controller) setLeading(on bool, guard clientv3.Cmp, term int64) {
	c.mu.Lock()
	c.leading, c.guard, c.term = on, guard, term
	c.mu.Unlock()
	c.metrics.leading(on)
}

// lead runs decision passes, on every tracker change and every poll, until
// the session ends, a move's guard fails, or ctx ends.
func (c *Controller) lead(ctx context.Context, s *concurrency.Session, guard clientv3.Cmp) error {
	tick := c.cfg.Clock.NewTicker(c.cfg.PollInterval)
	defer tick.Stop()
	for {
		changed := c.tracker.Changed()
		if err := c.pass(ctx, guard); err != nil {
			if errors.Is(err, ownership.ErrGuardFailed) {
				return err // deposed: campaign again
			}
			if ctx.Err() == nil {
				c.cfg.Logger.Warn("failover pass failed", "err", err)
			}
		}
		if err := c.publish(ctx, guard); err != nil && ctx.Err() == nil {
			c.cfg.Logger.Warn("failover view not published", "err", err)
		}
		if err := c.wait(ctx, s, tick, changed); err != nil {
			return err
		}
	}
}

// wait returns nil at the next poll, tracker change, or timed transition
// of a region, and an error when the session or ctx ends.
func (c *Controller) wait(ctx context.Context, s *concurrency.Session, tick clock.Ticker, changed <-chan struct{}) error {
	// Re-read exactly when a suspect region's confirmation falls due, not
	// up to a poll interval later: that delay would add to every failover.
	var due <-chan time.Time
	if at, ok := c.tracker.NextTransition(); ok {
		timer := c.cfg.Clock.NewTimer(max(at.Sub(c.cfg.Clock.Now()), time.Millisecond))
		defer timer.Stop()
		due = timer.C()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s.Done():
		return errors.New("failover: election session lost")
	case <-tick.C():
	case <-due:
	case <-changed:
	}
	return nil
}

// pass re-reads the regions linearizably and fails over every failed
// region that still owns shards.
func (c *Controller) pass(ctx context.Context, guard clientv3.Cmp) error {
	states, err := c.tracker.Refresh(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range c.cfg.Topology.Names() {
		if states[r] != Failed {
			continue
		}
		if _, err := c.failRegion(ctx, guard, r, states); err != nil {
			errs = append(errs, err)
			if errors.Is(err, ownership.ErrGuardFailed) {
				break
			}
		}
	}
	if len(errs) == 0 {
		errs = append(errs, c.finishStuck(ctx, guard))
	}
	return errors.Join(errs...)
}

// failRegion moves every shard region owns (and finishes the interrupted
// transfers that are the failover's to finish: failoverFinishes) under
// guard, and audits the region's failover.
func (c *Controller) failRegion(ctx context.Context, guard clientv3.Cmp, region string, states map[string]RegionState) ([]Moved, error) {
	entries, listRev, err := c.cfg.Directory.List(ctx)
	if err != nil {
		return nil, err
	}
	healthy := func(r string) bool { return states[r] == Healthy }
	var plans []plan
	var errs []error
	for _, e := range entries {
		switch {
		case e.State == ownership.Fencing:
			if failoverFinishes(e, region) {
				plans = append(plans, finishPlan(e))
			}
		case e.Owner == region:
			to, err := target(c.cfg.Topology, e.Shard, region, healthy)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			plans = append(plans, plan{entry: e, to: to, final: ownership.FailedOver})
		}
	}
	if len(plans) == 0 {
		return nil, errors.Join(errs...)
	}
	failedRev := c.tracker.failedRevision(region)
	if failedRev == 0 {
		failedRev = listRev // a failure this tracker did not confirm: back since the listing
	}
	reason := fmt.Sprintf("region %s failed: no liveness key for %s", region, c.cfg.ConfirmDelay)
	switch cleanly, found := c.tracker.failedHow(region); {
	case cleanly:
		reason = fmt.Sprintf("region %s failed: its instances left cleanly (stopped), no instance remains", region)
	case found == CutOff:
		reason = fmt.Sprintf("region %s failed: no liveness key, and its instance answers that it cannot reach etcd", region)
	case found == Down:
		reason = fmt.Sprintf("region %s failed: no liveness key, and nothing serves at its address (connection refused or closed)", region)
	case found == Silent:
		reason = fmt.Sprintf("region %s failed: no liveness key, and its address accepts a connection but nothing answers (a stopped or hung process)", region)
	}
	moved, err := runMoves(ctx, c.cfg.Directory, plans, ControllerOperator, reason, c.cfg.MoveConcurrency,
		ownership.Guard(guard), ownership.GuardStart(stillFailed(c.cfg.Prefix, region, failedRev)))
	if errors.Is(err, ownership.ErrGuardFailed) {
		if back, berr := c.registeredSince(ctx, region, failedRev); berr == nil && back && c.holds(ctx, guard) {
			// The region came back during its failover (the moves are
			// refused, and the rest not tried): not a lost election.
			err = fmt.Errorf("%w: %s (%d of %d shards moved before)", ErrRegionBack, region,
				committed(moved), len(plans))
		}
	}
	errs = append(errs, err)
	if n := committed(moved); n > 0 {
		c.metrics.failover(ctx, region, n)
		detail := fmt.Sprintf("region=%s shards_moved=%d of %d", region, n, len(plans))
		if aerr := c.cfg.Audit.Audit(ctx, ControllerOperator, "region_failover", reason, detail); aerr != nil {
			errs = append(errs, fmt.Errorf("failover: audit: %w", aerr))
		}
		c.cfg.Logger.Warn("region failed over", "failed_region", region, "shards", n, "of", len(plans))
	}
	return moved, errors.Join(errs...)
}

// failoverFinishes reports whether failing region over finishes e, a
// shard in FENCING: a transfer away from region (its old owner is gone, so
// no drain protects anything and only finishing it lets the shard be
// served again), or one a controller started (a failover's own moves never
// drain). Any other transfer is a planned move (idemctl move, drain,
// failback) between regions that are alive, whose mover may be draining an
// operation still in flight at the retiring epoch: bumping the fence under
// it would refuse that operation's result after its client got its answer,
// so it is left to its mover. If that mover died, finishStuck finishes the
// transfer once it has sat unchanged for StuckAfter, longer than any drain
// may last (CheckDrain).
func failoverFinishes(e ownership.Entry, region string) bool {
	t := e.Transfer
	return t != nil && (t.FromOwner == region || t.Operator == ControllerOperator)
}

// stillFailed is the comparison every move of region's failover also
// carries: no liveness key of region was created after failedRev, the
// revision of the read that confirmed its failure. A failover plans on
// one listing and moves the shards in batches; once an instance of the
// region registers again, its remaining moves are refused in etcd, so a
// failover never moves a shard away from a region that is back (and
// perhaps already being failed back by an operator).
func stillFailed(prefix, region string, failedRev int64) clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(ownership.LivenessKey(prefix, region, "")), "<", failedRev+1).
		WithPrefix()
}

// registeredSince reports whether an instance of region registered after
// revision rev.
func (c *Controller) registeredSince(ctx context.Context, region string, rev int64) (bool, error) {
	resp, err := c.cfg.Client.Get(ctx, ownership.LivenessKey(c.cfg.Prefix, region, ""), clientv3.WithPrefix(),
		clientv3.WithMinCreateRev(rev+1), clientv3.WithCountOnly())
	if err != nil {
		return false, err
	}
	return resp.Count > 0, nil
}

// holds reports whether guard (the term's election guard) still holds.
func (c *Controller) holds(ctx context.Context, guard clientv3.Cmp) bool {
	resp, err := c.cfg.Client.Txn(ctx).If(guard).Commit()
	return err == nil && resp.Succeeded
}
