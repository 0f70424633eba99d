// Package daemon wires one region's idemd from its configuration: the SQL
// store, the JWT verifier, the upstream proxy, the gateway, the Prometheus
// exporter, the etcd liveness key and the HTTP server. cmd/idemd and the
// local dev cluster both start regions through it.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/idemcoord/idemcoord/authn"
	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/region"
	"github.com/idemcoord/idemcoord/store"
)

// LivenessPrefix is where instances keep their liveness keys in etcd:
// LivenessPrefix + region + "/" + worker, attached to a session lease
// (ownership.LivenessKey under ownership.DefaultPrefix).
const LivenessPrefix = ownership.DefaultPrefix + "liveness/"

// etcdCloseGrace is how long Close lets the etcd watches end by
// themselves before it closes the etcd client under them (which an etcd
// that does not answer requires).
const etcdCloseGrace = 2 * time.Second

// Options are what a configuration file does not say.
type Options struct {
	// Logger is the base logger. Default slog.Default().
	Logger *slog.Logger
	// Transport, if set, carries upstream calls (tests inject faults here).
	Transport http.RoundTripper
	// ForwardTransport, if set, carries requests forwarded to other
	// regions' gateways (a drill cuts one region off here).
	ForwardTransport http.RoundTripper
	// Failover overrides the failover controller's timings (ConfirmDelay,
	// HoldTime, StartupGrace, PollInterval, ElectionTTL, MoveConcurrency,
	// Clock); its connection fields are the daemon's. Zero fields take the
	// failover package's defaults.
	Failover failover.Config
	// Listener, if set, is served instead of listening on cfg.Listen: a
	// caller that must know the address before the configuration is
	// written (the dev cluster) opens it first.
	Listener net.Listener
	// Migrate applies the store's migrations at start (idemd run
	// --migrate, the dev cluster, tests). Default false: a store without
	// the schema fails the start with sqlstore.ErrSchemaMissing.
	Migrate bool
	// SpanExporter, if set, receives the daemon's spans (tests pass an
	// in-memory one). Default: OTLP when OTEL_EXPORTER_OTLP_ENDPOINT or
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, otherwise no tracing.
	SpanExporter sdktrace.SpanExporter
	// Clock is the instance's wall clock: what the gateway's lease checks
	// and heartbeats, the liveness key's validity and keepalives, the
	// ownership directory's moves, the failover controller's timings
	// (unless Failover.Clock is set) and the cleanup and gauge loops read.
	// Default clock.Real(). Lease expiry itself is the store's time. The
	// drill build of idemd passes a skewable clock here (clock skew).
	Clock clock.Clock
	// OpenStore opens the store. Default OpenSQLStore (package sqlstore
	// on cfg.Store.DSN). A new backend is wired in here (docs/store.md).
	OpenStore StoreOpener
	// UnsafeDrillStore, if set, wraps the store the gateway uses. Drills
	// only; never in production: chaos drills set it to break the
	// coordinator on purpose and prove the checker sees it. It has no
	// configuration key: only Go code that starts a daemon can set it.
	UnsafeDrillStore func(store.Store) store.Store
}

// Daemon is one running region instance.
type Daemon struct {
	cfg   *config.Config
	store store.Backend
	gw    *gateway.Gateway
	srv   *http.Server
	ln    net.Listener
	etcd  *clientv3.Client
	live  *ownership.Liveness
	dir   *ownership.Directory
	cache *ownership.Cache
	topo  *region.Topology
	ctl   *failover.Controller
	// stopCtl ends the failover controller's Run.
	stopCtl context.CancelFunc
	opts    Options
	tel     *telemetry
	bg      *background
	log     *slog.Logger
	// done is closed when the server stops serving; err says why (nil
	// after Close).
	done      chan struct{}
	err       error
	closing   chan struct{}
	closeOnce sync.Once
}

// Start opens the store, connects to etcd (if configured), and serves on
// cfg.Listen until Close.
func Start(ctx context.Context, cfg *config.Config, opts Options) (d *Daemon, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	log := opts.Logger.With("region", cfg.Region)
	started := &Daemon{cfg: cfg, opts: opts, log: log, done: make(chan struct{}), closing: make(chan struct{})}
	d = started
	defer func() {
		if err != nil {
			started.Close(context.Background()) // whatever was opened so far
		}
	}()
	if d.tel, err = newTelemetry(ctx, cfg, opts); err != nil {
		return nil, err
	}
	meter := d.tel.mp.Meter("github.com/idemcoord/idemcoord")
	endpoints := make([]string, len(cfg.Endpoints))
	for i, ep := range cfg.Endpoints {
		endpoints[i] = ep.Name
	}
	open := opts.OpenStore
	if open == nil {
		open = OpenSQLStore
	}
	if d.store, err = open(ctx, StoreConfig{Store: cfg.Store, Migrate: opts.Migrate, Endpoints: endpoints,
		Meter: meter, Logger: log}); err != nil {
		return nil, err
	}
	authCfg, err := cfg.AuthConfig()
	if err != nil {
		return nil, err
	}
	verifier, err := authn.NewVerifier(authCfg)
	if err != nil {
		return nil, err
	}
	upstream, err := url.Parse(cfg.Upstream)
	if err != nil {
		return nil, fmt.Errorf("upstream: %w", err)
	}
	if d.topo, err = region.FromConfig(cfg); err != nil {
		return nil, err
	}
	transport := opts.Transport
	if transport == nil {
		if transport, err = upstreamTransport(cfg.UpstreamTLS); err != nil {
			return nil, err
		}
	}
	var gwStore store.Store = d.store
	if opts.UnsafeDrillStore != nil {
		gwStore = opts.UnsafeDrillStore(gwStore)
	}
	gcfg := gateway.Config{
		Region: cfg.Region, Worker: cfg.WorkerName(), Shards: cfg.Shards, Store: gwStore, Auth: verifier,
		Endpoints: cfg.Endpoints, Next: gateway.NewProxy(upstream, transport),
		Logger: log, Meter: meter, Metrics: d.tel.handler, TracerProvider: d.tel.tracerProvider(),
		Clock: opts.Clock,
	}
	if len(cfg.Etcd.Endpoints) > 0 {
		// Multi-region: ownership comes from the etcd directory, and
		// requests for actors of other regions go to their owner.
		if err := d.joinEtcd(ctx, cfg, meter, log); err != nil {
			return nil, err
		}
		gcfg.Owners, gcfg.Topology, gcfg.Routing = d.cache, d.topo, cfg.Routing
		gcfg.ForwardTransport = opts.ForwardTransport
		gcfg.Ready = d.ready
		gcfg.Health = d.ctl.Tracker()
	} else if err := d.store.BootstrapFences(ctx, cfg.Shards, d.topo.Home); err != nil {
		// Single-region mode: every shard is the local region's, before
		// anything is served; a store bootstrapped with another shard
		// count refuses to start.
		return nil, err
	}
	if d.gw, err = gateway.New(gcfg); err != nil {
		return nil, err
	}
	if err := d.startBackground(cfg, meter, clock.Or(opts.Clock), log); err != nil {
		return nil, err
	}
	if opts.Listener != nil {
		d.ln = opts.Listener
	} else if d.ln, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: d.gw, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	if cfg.TLS.Enabled() {
		if srv.TLSConfig, err = listenerTLS(cfg.TLS); err != nil {
			d.ln.Close()
			return nil, err
		}
	}
	d.srv = srv // Close waits for serve from here on
	go d.serve()
	log.InfoContext(ctx, "region serving", "addr", d.ln.Addr().String(), "upstream", upstream.Redacted(),
		"tls", cfg.TLS.Enabled())
	return d, nil
}

// serve runs the HTTP server until it fails or Close stops it, and then
// closes Done. A server that stops without Close (the listener failed) is
// an error: Err reports it and idemd run exits non-zero.
func (d *Daemon) serve() {
	var err error
	if d.srv.TLSConfig != nil {
		err = d.srv.ServeTLS(d.ln, "", "")
	} else {
		err = d.srv.Serve(d.ln)
	}
	select {
	case <-d.closing:
		err = nil // Close stopped it
	default:
		if err == nil || errors.Is(err, http.ErrServerClosed) {
			err = ErrStopped
		}
		err = fmt.Errorf("daemon: listener %s: %w", d.ln.Addr(), err)
		d.log.Error("gateway stopped serving", "err", err)
	}
	d.err = err
	close(d.done)
}

// ErrStopped is Err's cause when the server stopped without Close and
// without an error of its own.
var ErrStopped = errors.New("daemon: server stopped unexpectedly")

// Done is closed when the daemon stops serving: after Close, or when its
// listener fails.
func (d *Daemon) Done() <-chan struct{} { return d.done }

// Err returns why the daemon stopped serving once Done is closed: nil
// after Close, the listener's error otherwise. Before Done it returns nil.
func (d *Daemon) Err() error {
	select {
	case <-d.done:
		return d.err
	default:
		return nil
	}
}

// Addr returns the address the daemon listens on.
func (d *Daemon) Addr() string { return d.ln.Addr().String() }

// Store returns the daemon's store (for tests and tools).
func (d *Daemon) Store() store.Backend { return d.store }

// Close drains and stops the daemon: it stops accepting connections (a
// new request is refused at connect), lets in-flight requests finish and
// record their results until ctx ends (the drain timeout; requests still
// running then have their connections closed, and their leases lapse to
// a takeover), waits for background executions, stops the cleanup and
// gauge loops, marks the instance as left and revokes its liveness lease
// (the region's last instance leaving fails the region over at once) and
// closes the store.
func (d *Daemon) Close(ctx context.Context) error {
	var errs []error
	d.closeOnce.Do(func() { close(d.closing) })
	if d.srv != nil {
		if err := d.srv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("daemon: drain: %w", err))
			d.srv.Close()
		}
		<-d.done
	}
	if d.gw != nil {
		d.gw.Close()
	}
	if d.stopCtl != nil {
		d.stopCtl()
	}
	if d.bg != nil {
		d.bg.stop()
	}
	if d.live != nil {
		// A clean shutdown hands over at once: the left marker tells the
		// other regions' trackers that this instance is gone on purpose,
		// so when it was its region's last one they fail the region
		// without waiting the confirmation delay (and nobody waits a
		// liveness TTL: the lease is revoked). Both steps are bounded by
		// the register timeout.
		d.live.Leave()
	}
	// The controller's and the cache's watches end when their contexts
	// do, except against an etcd that does not answer: there the etcd
	// client holds them until it is closed. So wait a little, close the
	// client, then wait for them to end.
	var watchers []<-chan struct{}
	if d.ctl != nil {
		watchers = append(watchers, d.ctl.Done())
	}
	if d.cache != nil {
		done := make(chan struct{})
		go func() { defer close(done); d.cache.Close() }()
		watchers = append(watchers, done)
	}
	grace := time.After(etcdCloseGrace)
	for _, w := range watchers {
		select {
		case <-w:
		case <-grace:
		}
	}
	if d.etcd != nil {
		d.etcd.Close()
	}
	for _, w := range watchers {
		<-w
	}
	if d.store != nil {
		d.store.Close()
	}
	if d.tel != nil {
		// Flushing the last spans gets a moment of its own after a drain
		// that used all of ctx.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		errs = append(errs, d.tel.shutdown(fctx))
		cancel()
	}
	return errors.Join(errs...)
}
