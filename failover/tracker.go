package failover

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/internal/lifecycle"
	"github.com/idemcoord/idemcoord/ownership"
)

// Tracker derives each region's liveness state from its instances'
// liveness keys. Every state comes from a linearizable read
// (ownership.Instances); the watch on the keys only says when to read
// again, and a poll on the clock drives the timed transitions. It is safe
// for concurrent use.
type Tracker struct {
	cli     *clientv3.Client
	prefix  string
	regions []string
	clk     clock.Clock
	poll    time.Duration
	tm      timing
	log     *slog.Logger

	// probe, when set, is asked once per suspect period whether the
	// region is down (Prober); probes run under probeCtx, which Close
	// ends, and Close waits for them.
	probe      Prober
	probeCtx   context.Context
	probeStop  context.CancelFunc
	probes     sync.WaitGroup
	probeCount metric.Int64Counter
	probesShut bool // under mu: Close began, no probe starts

	mu      sync.Mutex
	status  map[string]*regionStatus
	changed chan struct{}
	loaded  bool
	lastRev int64 // revision of the newest read applied

	run lifecycle.Runner
}

var _ lifecycle.Component = (*Tracker)(nil)

// NewTracker returns a tracker of cfg.Topology's regions. Only Client and
// Topology are required of cfg; the timing fields default as documented
// on Config.
func NewTracker(cfg Config) (*Tracker, error) {
	if cfg.Client == nil || cfg.Topology == nil {
		return nil, fmt.Errorf("%w: tracker needs Client and Topology", ErrBadConfig)
	}
	cfg = cfg.withDefaults()
	t := &Tracker{cli: cfg.Client, prefix: cfg.Prefix, regions: cfg.Topology.Names(), clk: cfg.Clock,
		poll: cfg.PollInterval, log: cfg.Logger, status: map[string]*regionStatus{}, changed: make(chan struct{}),
		tm: timing{confirm: cfg.ConfirmDelay, hold: cfg.HoldTime, grace: cfg.StartupGrace, started: cfg.Clock.Now()}}
	for _, r := range t.regions {
		t.status[r] = &regionStatus{}
	}
	t.probe = cfg.Probe
	t.probeCtx, t.probeStop = context.WithCancel(context.Background())
	m := cfg.Meter
	if m == nil {
		m = noop.NewMeterProvider().Meter("")
	}
	t.probeCount, _ = m.Int64Counter("idemcoord.failover.down_probes",
		metric.WithDescription("Probes of a region that turned suspect, by watched_region and result: down (nothing serves at its address), cut_off (its instance answers that it cannot reach etcd) or silent (its address accepts and nothing answers within the silence window: a stopped process), all failed without the confirmation delay, or not_down (the confirmation delay runs)."))
	return t, nil
}

// Refresh reads every instance key linearizably, moves each region's state
// and returns the states. Decisions are taken on what Refresh returns,
// never on a watch event.
func (t *Tracker) Refresh(ctx context.Context) (map[string]RegionState, error) {
	reg, err := ownership.ReadRegistrations(ctx, t.cli, t.prefix)
	if err != nil {
		return nil, fmt.Errorf("failover: %w", err)
	}
	rev := reg.Revision
	byRegion := map[string][]ownership.Instance{}
	for _, in := range reg.Instances {
		byRegion[in.Region] = append(byRegion[in.Region], in)
	}
	now := t.clk.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]RegionState, len(t.regions))
	if rev < t.lastRev {
		// A concurrent Refresh applied a newer read: never step back.
		for _, r := range t.regions {
			out[r] = t.status[r].state
		}
		return out, nil
	}
	t.lastRev = rev
	moved := !t.loaded
	t.loaded = true
	for _, r := range t.regions {
		st := t.status[r]
		prev := st.state
		if st.observe(now, rev, byRegion[r], reg.Left, t.tm) {
			moved = true
			t.log.Info("region state", "watched_region", r, "from", prev, "to", st.state, "instances", len(st.seen))
		}
		out[r] = st.state
		if st.state == Suspect && st.everLive && !st.probing && t.probe != nil && !t.probesShut {
			st.probing = true
			t.probes.Add(1)
			go t.probeRegion(r, st.since)
		}
	}
	if moved {
		close(t.changed)
		t.changed = make(chan struct{})
	}
	return out, nil
}

// State returns a region's state ("" for a region the tracker does not
// know or before the first Refresh).
func (t *Tracker) State(region string) RegionState {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st, ok := t.status[region]; ok {
		return st.state
	}
	return ""
}

// failedRevision returns the etcd revision of the read that confirmed
// region's last failure (0 when the tracker never saw it fail): only a
// registration created after it is the region coming back. It stays
// after the region recovered, so a failover still under way then is
// refused.
func (t *Tracker) failedRevision(region string) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st, ok := t.status[region]; ok {
		return st.failedRev
	}
	return 0
}

// probeRegion asks the Prober what serves at region, suspect since
// since; if it is down, cut off from etcd or silent and the region is still in
// that suspect period, it reads again at once, which fails the region
// (observe).
func (t *Tracker) probeRegion(region string, since time.Time) {
	defer t.probes.Done()
	ctx, cancel := context.WithTimeout(t.probeCtx, min(max(t.tm.confirm, probeTimeoutFloor), probeTimeoutCeil))
	found := t.probe.Probe(ctx, region)
	cancel()
	if t.probeCtx.Err() != nil {
		return
	}
	t.probeCount.Add(t.probeCtx, 1, metric.WithAttributes(attribute.String("watched_region", region), attribute.String("result", found.String())))
	t.mu.Lock()
	st := t.status[region]
	current := st.state == Suspect && st.since.Equal(since)
	if current {
		st.found = found
	}
	t.mu.Unlock()
	if !current || found == Unproven {
		return
	}
	switch found {
	case CutOff:
		t.log.Warn("suspect region is cut off: its instance answers that it cannot reach etcd", "watched_region", region)
	case Silent:
		t.log.Warn("suspect region is silent: its address accepts a connection and nothing answers (a stopped or hung process)", "watched_region", region)
	default:
		t.log.Warn("suspect region is down: nothing serves at its address", "watched_region", region)
	}
	if _, err := t.Refresh(t.probeCtx); err != nil && t.probeCtx.Err() == nil {
		t.log.Warn("region liveness read failed", "err", err)
	}
}

// A probe is given the confirmation delay (past it, the delay decides
// anyway), at least probeTimeoutFloor and at most probeTimeoutCeil (real
// time: a refusal comes within a round trip, and a probe that hangs
// proves nothing).
const (
	probeTimeoutFloor = 250 * time.Millisecond
	probeTimeoutCeil  = time.Second
)

// failedHow reports why region's last failure was confirmed: cleanly,
// its instances all left (they were stopped); found, what the Prober
// found (Down, CutOff or Silent) before the confirmation delay ran out; neither
// (Unproven), none answered for the confirmation delay.
func (t *Tracker) failedHow(region string) (cleanly bool, found Finding) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st, ok := t.status[region]; ok {
		return st.failedCleanly, st.failedFound
	}
	return false, Unproven
}

// States returns every region's state (empty before the first Refresh).
func (t *Tracker) States() map[string]RegionState {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]RegionState, len(t.status))
	for r, st := range t.status {
		if st.state != "" {
			out[r] = st.state
		}
	}
	return out
}

// Statuses returns every region's status, in topology order.
func (t *Tracker) Statuses() []RegionStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]RegionStatus, 0, len(t.regions))
	for _, r := range t.regions {
		st := t.status[r]
		out = append(out, RegionStatus{Region: r, State: st.state, Since: st.since, Instances: len(st.seen)})
	}
	return out
}

// NextTransition returns when the next timed state change may fall due
// (a suspect region's confirmation, a recovering region's hold), and
// false when none is pending.
func (t *Tracker) NextTransition() (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var next time.Time
	for _, st := range t.status {
		if d := st.deadline(t.tm); !d.IsZero() && (next.IsZero() || d.Before(next)) {
			next = d
		}
	}
	return next, !next.IsZero()
}

// Healthy reports whether region is Healthy.
func (t *Tracker) Healthy(region string) bool { return t.State(region) == Healthy }

// Changed returns a channel closed at the next state change.
func (t *Tracker) Changed() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.changed
}

// Start starts the tracker's loop and returns at once: it refreshes on
// every change of a liveness key (the watch is only a hint to read again)
// and every poll interval, until ctx ends or Close. Read errors are
// logged and retried at the next poll. A tracker that is not started
// still answers Refresh. It can be started once.
func (t *Tracker) Start(ctx context.Context) error { return t.run.Start(ctx, nil, t.follow) }

// Close stops the tracker's loop and its probes and waits for them;
// idempotent. The tracker keeps the states it last read.
func (t *Tracker) Close() error {
	err := t.run.Close()
	t.mu.Lock()
	t.probesShut = true
	t.mu.Unlock()
	t.probeStop()
	t.probes.Wait()
	return err
}

// Done is closed once the tracker's loop has stopped.
func (t *Tracker) Done() <-chan struct{} { return t.run.Done() }

// Err returns nil while the loop runs and after Close, then why it
// stopped (the cause of Start's context when that ended).
func (t *Tracker) Err() error { return t.run.Err() }

// follow is the tracker's loop (Start).
func (t *Tracker) follow(ctx context.Context) error {
	tick := t.clk.NewTicker(t.poll)
	defer tick.Stop()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var events clientv3.WatchChan
	var from int64
	for {
		if events == nil {
			events = t.cli.Watch(clientv3.WithRequireLeader(wctx), t.prefix+"liveness/", clientv3.WithPrefix(),
				clientv3.WithRev(from))
		}
		_, err := t.Refresh(ctx)
		if err != nil && ctx.Err() == nil {
			t.log.Warn("region liveness read failed", "err", err)
		}
		// Re-read when a timed transition falls due, not up to a poll
		// later: every instance's view (the gateways' waits, /readyz)
		// follows the leader's within milliseconds. After a failed read
		// the poll retries, not a timer already due.
		due, stop := (<-chan time.Time)(nil), func() {}
		if err == nil {
			due, stop = t.dueTimer()
		}
		select {
		case <-ctx.Done():
			stop()
			return ctx.Err()
		case <-tick.C():
		case <-due:
		case w, ok := <-events:
			switch {
			case !ok:
				events, from = nil, 0
			case errors.Is(w.Err(), rpctypes.ErrCompacted):
				events, from = nil, 0 // read everything again and watch from now
			case w.Err() != nil:
				events, from = nil, 0
			default:
				from = w.Header.Revision + 1
			}
		}
		stop()
	}
}

// dueTimer returns a channel that fires when the next timed transition
// falls due (nil when none is pending) and the function that stops it.
func (t *Tracker) dueTimer() (<-chan time.Time, func()) {
	at, ok := t.NextTransition()
	if !ok {
		return nil, func() {}
	}
	timer := t.clk.NewTimer(max(at.Sub(t.clk.Now()), time.Millisecond))
	return timer.C(), func() { timer.Stop() }
}
