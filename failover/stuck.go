package failover

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idemcoord/idemcoord/ownership"
)

// stuckTransfers remembers, for the leading controller, the shards it
// found in FENCING and since when (on its clock), keyed by the etcd
// revision: a transfer that moved on is a new one. Only the lead loop
// touches it.
type stuckTransfers struct {
	seen     map[int]stuckSeen
	lastScan time.Time
}

type stuckSeen struct {
	rev   int64
	since time.Time
}

// reset forgets everything: a new term starts its own watch.
func (s *stuckTransfers) reset() { *s = stuckTransfers{} }

// scanDue reports whether the directory should be listed again: four
// times per stuckAfter, so a stuck transfer is finished between
// stuckAfter and 1.25 stuckAfter after the leader first saw it.
func (s *stuckTransfers) scanDue(now time.Time, stuckAfter time.Duration) bool {
	if !s.lastScan.IsZero() && now.Sub(s.lastScan) < stuckAfter/4 {
		return false
	}
	s.lastScan = now
	return true
}

// observe records the FENCING entries of a listing and returns those
// that have stayed FENCING at the same revision for stuckAfter.
func (s *stuckTransfers) observe(entries []ownership.Entry, now time.Time, stuckAfter time.Duration) []ownership.Entry {
	next := map[int]stuckSeen{}
	var due []ownership.Entry
	for _, e := range entries {
		if e.State != ownership.Fencing || e.Transfer == nil {
			continue
		}
		seen, ok := s.seen[e.Shard]
		if !ok || seen.rev != e.ModRevision {
			seen = stuckSeen{rev: e.ModRevision, since: now}
		}
		next[e.Shard] = seen
		if now.Sub(seen.since) >= stuckAfter {
			due = append(due, e)
		}
	}
	s.seen = next
	return due
}

// finishStuck finishes, under guard, every transfer the leader has seen
// in FENCING, unchanged, for StuckAfter: its mover died or gave up (a
// failback that timed out, an operator's move killed between its steps),
// and until someone finishes it the shard refuses every write. Finishing
// is what any mover does first (ownership.Directory.Move rolls an
// interrupted transfer forward to the target and final state it
// recorded), so it moves nothing anywhere the transfer did not already
// say; the directory re-reads each shard itself before it writes, so the
// listing only says which shards to look at.
func (c *Controller) finishStuck(ctx context.Context, guard clientv3.Cmp) error {
	now := c.cfg.Clock.Now()
	if !c.stuck.scanDue(now, c.cfg.StuckAfter) {
		return nil
	}
	entries, _, err := c.cfg.Directory.List(ctx)
	if err != nil {
		return err
	}
	due := c.stuck.observe(entries, now, c.cfg.StuckAfter)
	if len(due) == 0 {
		return nil
	}
	plans := make([]plan, len(due))
	for i, e := range due {
		plans[i] = finishPlan(e)
	}
	reason := fmt.Sprintf("transfer left in FENCING for %s, finished by the failover controller", c.cfg.StuckAfter)
	moved, err := runMoves(ctx, c.cfg.Directory, plans, ControllerOperator, reason, c.cfg.MoveConcurrency,
		ownership.Guard(guard))
	if n := committed(moved); n > 0 {
		c.cfg.Logger.Warn("interrupted transfers finished", "shards", n, "of", len(plans))
	}
	return err
}
