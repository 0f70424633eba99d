package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/internal/lifecycle"
	"github.com/idemcoord/idemcoord/internal/reach"
	"github.com/idemcoord/idemcoord/ownership"
)

// minBootstrapTimeout bounds the directory's bootstrap at start: about a
// dozen small etcd transactions and one SQL transaction, which take well
// under a second on a healthy cluster; an etcd or store that does not
// answer in this long fails the start instead of hanging it.
const minBootstrapTimeout = 20 * time.Second

var _ gateway.Owners = (*ownership.Cache)(nil)

// joinEtcd connects to etcd, bootstraps the ownership directory (every
// shard owned by its home region at epoch 1, in etcd and in the SQL
// fences; a directory with another shard count refuses the start), opens
// the watch-fed ownership cache the gateway routes by, and registers this
// instance's liveness key. It fails within bounded time when etcd does not
// answer.
func (d *Daemon) joinEtcd(ctx context.Context, cfg *config.Config, meter metric.Meter, log *slog.Logger) error {
	tc, err := cfg.Etcd.TLS.Client()
	if err != nil {
		return err
	}
	log.Info("connecting to etcd", "endpoints", strings.Join(cfg.Etcd.Endpoints, ","), "timeout", cfg.Etcd.DialTimeout.String())
	d.etcd, err = clientv3.New(clientv3.Config{Endpoints: cfg.Etcd.Endpoints, DialTimeout: cfg.Etcd.DialTimeout, TLS: tc,
		Logger: zap.NewNop()})
	if err != nil {
		return &reach.Error{Part: "etcd", Addrs: cfg.Etcd.Endpoints, Err: err}
	}
	// One linearizable read, bounded by the dial timeout: an etcd that
	// does not answer fails the start now, named, rather than the
	// bootstrap below after its longer bound.
	err = reach.Step(ctx, "etcd", reach.EtcdAddrs(cfg.Etcd.Endpoints), cfg.Etcd.DialTimeout, func(ctx context.Context) error {
		_, err := d.etcd.Get(ctx, ownership.DefaultPrefix, clientv3.WithCountOnly())
		return err
	})
	if err != nil {
		return fmt.Errorf("%w (etcd.dial_timeout %s)", err, cfg.Etcd.DialTimeout)
	}
	bctx, cancel := context.WithTimeout(ctx, max(minBootstrapTimeout, 4*cfg.Etcd.DialTimeout))
	defer cancel()
	clk := clock.Or(d.opts.Clock)
	d.dir = ownership.NewDirectory(d.etcd, d.store, ownership.WithLogger(log), ownership.WithClock(clk),
		ownership.WithMeter(meter))
	if err := d.dir.Bootstrap(bctx, d.topo, cfg.Shards); err != nil {
		return fmt.Errorf("ownership directory: %w", err)
	}
	cc := ownership.DefaultCacheConfig()
	cc.Client, cc.Logger, cc.Clock = d.etcd, log, clk
	if d.cache, err = ownership.NewCache(cc); err != nil {
		return fmt.Errorf("ownership cache: %w", err)
	}
	if err := lifecycle.StartBounded(bctx, d.lifetime, d.cache); err != nil {
		return fmt.Errorf("ownership cache: %w", err)
	}
	lc := ownership.DefaultLivenessConfig()
	lc.Client, lc.Region, lc.Instance = d.etcd, cfg.Region, cfg.WorkerName()
	lc.RegisterTimeout, lc.TTL, lc.Logger, lc.Clock = cfg.Etcd.DialTimeout, cfg.Etcd.LivenessTTL, log, clk
	if d.live, err = ownership.NewLiveness(lc); err != nil {
		return fmt.Errorf("etcd liveness: %w", err)
	}
	if err := lifecycle.StartBounded(ctx, d.lifetime, d.live); err != nil {
		return fmt.Errorf("etcd liveness: %w", err)
	}
	return d.startFailover(ctx, cfg, meter, log)
}

// startFailover runs this instance's failover controller: every instance
// tracks the regions' liveness (the gateway's failover policies decide by
// it) and campaigns; the elected one moves the shards of a failed region,
// every write guarded by its election key.
func (d *Daemon) startFailover(ctx context.Context, cfg *config.Config, meter metric.Meter, log *slog.Logger) error {
	fc := d.opts.Failover
	if fc.ElectionTTL == 0 {
		fc.ElectionTTL = cfg.Etcd.ElectionTTL
	}
	if fc.ConfirmDelay == 0 {
		fc.ConfirmDelay = cfg.Etcd.ConfirmDelay
	}
	fc.Client, fc.Directory, fc.Topology, fc.Audit = d.etcd, d.dir, d.topo, d.store
	if fc.Probe == nil && cfg.Etcd.DownProbe != config.DownProbeOff {
		fc.Probe = failover.PeerProbe{URL: d.topo.URL, Silence: failover.ProbeSilenceFor(fc.ConfirmDelay)}
	}
	fc.Name, fc.Meter, fc.Logger = cfg.Region+"/"+cfg.WorkerName(), meter, log
	if fc.Clock == nil {
		fc.Clock = d.opts.Clock // nil too: the failover package's default, the system clock
	}
	ctl, err := failover.NewController(fc)
	if err != nil {
		return fmt.Errorf("failover controller: %w", err)
	}
	d.ctl = ctl
	return lifecycle.StartBounded(ctx, d.lifetime, ctl)
}

// ready reports why the instance cannot serve multi-region traffic: its
// liveness key is missing or etcd does not answer, or the ownership cache
// is not following the directory.
func (d *Daemon) ready(ctx context.Context) error {
	if err := d.live.Ready(ctx); err != nil {
		return fmt.Errorf("etcd liveness: %w", err)
	}
	if err := d.cache.Ready(); err != nil {
		return fmt.Errorf("ownership cache: %w", err)
	}
	return nil
}

// Directory returns the ownership directory (nil in single-region mode),
// for tools and tests that move shards.
func (d *Daemon) Directory() *ownership.Directory { return d.dir }

// Failover returns the failover controller (nil in single-region mode).
func (d *Daemon) Failover() *failover.Controller { return d.ctl }

// Owners returns the ownership cache (nil in single-region mode).
func (d *Daemon) Owners() *ownership.Cache { return d.cache }
