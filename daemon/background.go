package daemon

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/internal/lifecycle"
	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/store"
)

const (
	// statsInterval is how often the operator gauges are recounted: one
	// bounded SQL count per instance every 30s is noise for the store, and
	// the alerts built on them hold for minutes.
	statsInterval = 30 * time.Second
	// stuckAfter is how long past its lease a running record counts as
	// stuck: a minute covers a heartbeat missed under load; a takeover
	// would have happened on the next retry anyway.
	stuckAfter = time.Minute
	// cleanupPassShare bounds one cleanup pass to this share of the
	// interval, so a huge backlog is worked off over several intervals
	// instead of in one long burst. A pass used to stop after 20 batches:
	// 10,000 records a minute with the defaults, less than 170 first runs a
	// second, so a busier region's backlog grew without end (see
	// docs/capacity.md). A time bound keeps up with whatever one
	// connection deletes in half the interval (4,500 to 43,000 records a
	// second measured on PostgreSQL on a loaded 2-core machine).
	cleanupPassShare = 2
)

// shardStates are the directory states the shards gauge reports, each at
// zero when no shard is in it.
var shardStates = []string{string(ownership.Active), string(ownership.Fencing), string(ownership.FailedOver)}

// background runs the daemon's periodic work: the cleanup loop and the
// gauge recount. Its owner is the Daemon, which stops it in Shutdown.
type background struct {
	run   lifecycle.Runner
	count func(context.Context)         // the gauges' recount, run once before Start returns
	loops []func(context.Context) error // the periodic loops
	mu    sync.Mutex
	stats store.Stats
	have  bool
}

var _ lifecycle.Component = (*background)(nil)

// Start counts once (the gauges are on the first scrape) and starts the
// loops, until ctx ends or Close.
func (b *background) Start(ctx context.Context) error {
	return b.run.Start(ctx, func(ctx context.Context) error { b.count(ctx); return nil }, b.loops...)
}

// Close stops the loops and waits for them.
func (b *background) Close() error { return b.run.Close() }

// Done is closed once the loops stopped.
func (b *background) Done() <-chan struct{} { return b.run.Done() }

// Err is why the loops stopped (nil after Close).
func (b *background) Err() error { return b.run.Err() }

// startBackground registers the gauges, counts once (within ctx) and
// starts the loops for the daemon's lifetime.
func (d *Daemon) startBackground(ctx context.Context, cfg *config.Config, meter metric.Meter, clk clock.Clock, log *slog.Logger) error {
	b := &background{}
	d.bg = b
	if err := d.registerGauges(meter); err != nil {
		return err
	}
	// The first count runs before the daemon serves (in Start), so the
	// gauges are on the first scrape.
	count := func(ctx context.Context) {
		st, err := d.store.Stats(ctx, store.DefaultStatsLimit, stuckAfter)
		if err != nil {
			log.WarnContext(ctx, "counting records for the gauges failed", "err", err)
			return
		}
		b.mu.Lock()
		b.stats, b.have = st, true
		b.mu.Unlock()
	}
	loops := []func(context.Context) error{every(clk, statsInterval, count)}
	if !cfg.Cleanup.Disabled {
		loops = append(loops, every(clk, cfg.Cleanup.Interval, func(ctx context.Context) {
			start := clk.Now()
			for clk.Now().Sub(start) < cfg.Cleanup.Interval/cleanupPassShare {
				n, err := d.store.Cleanup(ctx, cfg.Cleanup.BatchSize)
				if err != nil {
					log.WarnContext(ctx, "cleanup pass failed", "err", err)
					return
				}
				if n < cfg.Cleanup.BatchSize {
					return
				}
			}
		}))
	}
	b.count, b.loops = count, loops
	return lifecycle.StartBounded(ctx, d.lifetime, b)
}

// every returns a loop that runs fn every interval until its context
// ends.
func every(clk clock.Clock, interval time.Duration, fn func(context.Context)) func(context.Context) error {
	return func(ctx context.Context) error {
		for clock.Sleep(ctx, clk, interval) == nil {
			fn(ctx)
		}
		return nil
	}
}

// registerGauges exports idemcoord_operations{state},
// idemcoord_operations_stuck, idemcoord_cleanup_backlog (from the last
// bounded count) and idemcoord_shards{state} (from the ownership cache,
// or every shard ACTIVE in single-region mode).
func (d *Daemon) registerGauges(meter metric.Meter) error {
	ops, err := meter.Int64ObservableGauge("idemcoord.operations",
		metric.WithDescription("Records by state, counted every 30s (each count capped at store.DefaultStatsLimit)."))
	if err != nil {
		return err
	}
	stuck, err := meter.Int64ObservableGauge("idemcoord.operations_stuck",
		metric.WithDescription("PENDING or IN_PROGRESS records whose lease expired over a minute ago."))
	if err != nil {
		return err
	}
	backlog, err := meter.Int64ObservableGauge("idemcoord.cleanup_backlog",
		metric.WithDescription("Expired finished records that cleanup has not deleted yet."))
	if err != nil {
		return err
	}
	shards, err := meter.Int64ObservableGauge("idemcoord.shards",
		metric.WithDescription("Shards by ownership state (ACTIVE, FENCING, FAILED_OVER), from the ownership cache."))
	if err != nil {
		return err
	}
	_, err = meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		d.bg.mu.Lock()
		st, have := d.bg.stats, d.bg.have
		d.bg.mu.Unlock()
		if have {
			for state, n := range st.ByState {
				o.ObserveInt64(ops, n, metric.WithAttributes(attribute.String("state", state)))
			}
			o.ObserveInt64(stuck, st.Stuck)
			o.ObserveInt64(backlog, st.CleanupBacklog)
		}
		for state, n := range d.shardCounts() {
			o.ObserveInt64(shards, n, metric.WithAttributes(attribute.String("state", state)))
		}
		return nil
	}, ops, stuck, backlog, shards)
	return err
}

// shardCounts counts the shards by state, as the ownership cache sees
// them (no I/O).
func (d *Daemon) shardCounts() map[string]int64 {
	counts := map[string]int64{}
	for _, s := range shardStates {
		counts[s] = 0
	}
	if d.cache == nil {
		counts[string(ownership.Active)] = int64(d.cfg.Shards)
		return counts
	}
	for i := 0; i < d.cfg.Shards; i++ {
		if _, _, state, ok := d.cache.Owner(i); ok {
			counts[state]++
		}
	}
	return counts
}
