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
	"github.com/idemcoord/idemcoord/internal/lifecycle"
	"github.com/idemcoord/idemcoord/internal/tracelog"
	"github.com/idemcoord/idemcoord/ledger"
	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/region"
	"github.com/idemcoord/idemcoord/store"
)

// LivenessPrefix is where instances keep their liveness keys in etcd:
// LivenessPrefix + region + "/" + worker, attached to a session lease
// (ownership.LivenessKey under ownership.DefaultPrefix).
const LivenessPrefix = ownership.DefaultPrefix + "liveness/"

// Options are what a configuration file does not say.
type Options struct {
	// Logger is the base logger. Default slog.Default(). The daemon adds
	// the region, and trace_id and span_id to every line logged in a span
	// (internal/tracelog).
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
	// OpenStore opens the store. Default OpenRegistered (the backend
	// store.backend names, from the store/backend registry).
	OpenStore StoreOpener
	// UnsafeDrillStore, if set, wraps the store the gateway uses. Drills
	// only; never in production: chaos drills set it to break the
	// coordinator on purpose and prove the checker sees it. It has no
	// configuration key: only Go code that starts a daemon can set it.
	UnsafeDrillStore func(store.Store) store.Store
}

// Daemon is one region instance. It follows the lifecycle of every
// long-lived component (internal/lifecycle): Start, Close, Done, Err; and
// Shutdown, Close with the drain deadline of the caller's choosing.
//
// Start starts its parts in this order, each only once the one before is
// ready: telemetry; the store (migrated with Options.Migrate); the JWT
// verifier and the topology; in multi-region mode the etcd client, the
// directory's bootstrap, the ownership cache, the liveness key and the
// failover controller; the gateway (whose async recovery and move sweep
// start with it); the cleanup and gauge loops; the HTTP server. Shutdown
// stops them the other way round: the server drains, the gateway finishes
// its background work, the controller and the loops stop, the liveness key
// leaves, the cache stops, the etcd client closes, then the store and the
// telemetry.
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
	notes *ledger.Notes // the gateway's incident events and store outages, closed after it
	opts  Options
	tel   *telemetry
	bg    *background
	log   *slog.Logger

	run lifecycle.Runner
	// lifetime is what the parts run for: they are stopped in order by
	// Shutdown, never by their context ending under them.
	lifetime context.Context
	// served is closed when the HTTP server has stopped serving.
	served       chan struct{}
	shutdownOnce sync.Once
	shutdownErr  error
}

var _ lifecycle.Component = (*Daemon)(nil)

// New validates cfg and returns a region instance that is not started:
// Start starts it.
func New(cfg *config.Config, opts Options) (*Daemon, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	// Every line logged with a request's (or another span's) context
	// carries its trace_id and span_id.
	log := slog.New(tracelog.Wrap(opts.Logger.Handler())).With("region", cfg.Region)
	return &Daemon{cfg: cfg, opts: opts, log: log, served: make(chan struct{})}, nil
}

// Start is New, then Daemon.Start for as long as Close or Shutdown is not
// called: ctx bounds the start only (cmd/idemd, the dev cluster).
func Start(ctx context.Context, cfg *config.Config, opts Options) (*Daemon, error) {
	d, err := New(cfg, opts)
	if err != nil {
		return nil, err
	}
	if err := d.start(ctx, context.WithoutCancel(ctx)); err != nil {
		return nil, err
	}
	return d, nil
}

// Start opens the store, connects to etcd (if configured), and returns
// once it serves on cfg.Listen (an error, and everything opened so far
// closed again, when it cannot). It serves until ctx ends, then drains
// for the configuration's drain_timeout and stops as Shutdown does, or
// until Close or Shutdown.
func (d *Daemon) Start(ctx context.Context) error { return d.start(ctx, ctx) }

// start starts the daemon within ctx, to run until lifetime ends.
func (d *Daemon) start(ctx, lifetime context.Context) error {
	return d.run.Start(lifetime, func(context.Context) error {
		d.lifetime = context.WithoutCancel(lifetime)
		if err := d.open(ctx); err != nil {
			d.shutdown(context.Background()) // whatever was opened so far
			return err
		}
		return nil
	}, d.serve, func(lctx context.Context) error {
		<-lctx.Done()
		if lifetime.Err() != nil {
			// The lifetime ended, not Close: drain and stop in order.
			sctx, cancel := context.WithTimeout(context.Background(), d.cfg.DrainTimeout)
			defer cancel()
			d.shutdown(sctx)
		}
		return nil
	})
}

// open starts the parts, in the order the Daemon's doc gives.
func (d *Daemon) open(ctx context.Context) (err error) {
	cfg, opts, log := d.cfg, d.opts, d.log
	if d.tel, err = newTelemetry(ctx, cfg, opts); err != nil {
		return err
	}
	meter := d.tel.mp.Meter("github.com/idemcoord/idemcoord")
	endpoints := make([]string, len(cfg.Endpoints))
	for i, ep := range cfg.Endpoints {
		endpoints[i] = ep.Name
		if note := ep.DownstreamWindowNote(); note != "" {
			log.WarnContext(ctx, "endpoint downstream_window: "+note, "endpoint", ep.Name)
		}
	}
	open := opts.OpenStore
	if open == nil {
		open = OpenRegistered
	}
	// The topology first: a backend that places shards by home region
	// (patroni) routes by it.
	if d.topo, err = region.FromConfig(cfg); err != nil {
		return err
	}
	if d.store, err = open(ctx, StoreConfig{Store: cfg.Store, Migrate: opts.Migrate, Shards: cfg.Shards, Home: d.topo.Home,
		Endpoints: endpoints, Meter: meter, Logger: log}); err != nil {
		return err
	}
	authCfg, err := cfg.AuthConfig()
	if err != nil {
		return err
	}
	verifier, err := authn.NewVerifier(authCfg)
	if err != nil {
		return err
	}
	upstream, err := url.Parse(cfg.Upstream)
	if err != nil {
		return fmt.Errorf("upstream: %w", err)
	}
	transport := opts.Transport
	if transport == nil {
		if transport, err = upstreamTransport(cfg.UpstreamTLS); err != nil {
			return err
		}
	}
	var gwStore store.Store = d.store
	if opts.UnsafeDrillStore != nil {
		gwStore = opts.UnsafeDrillStore(gwStore)
	}
	// The incident ledger's notes: requests held or refused while a shard
	// is between owners (multi-region), and the store outages the
	// gateway's own store calls see, with the requests refused meanwhile
	// (every mode).
	d.notes = ledger.NewNotes(d.store, 0, log)
	gwStore = d.notes.Watch(gwStore, cfg.Region, cfg.WorkerName(), opts.Clock)
	gcfg := gateway.Config{
		Region: cfg.Region, Worker: cfg.WorkerName(), Shards: cfg.Shards, Store: gwStore, Auth: verifier,
		Endpoints: cfg.Endpoints, Next: gateway.NewProxy(upstream, transport),
		Logger: log, Meter: meter, Metrics: d.tel.handler, TracerProvider: d.tel.tracerProvider(),
		Clock: opts.Clock, Ledger: d.notes,
	}
	if len(cfg.Etcd.Endpoints) > 0 {
		// Multi-region: ownership comes from the etcd directory, and
		// requests for actors of other regions go to their owner.
		if err := d.joinEtcd(ctx, cfg, meter, log); err != nil {
			return err
		}
		gcfg.Owners, gcfg.Topology, gcfg.Routing = d.cache, d.topo, cfg.Routing
		gcfg.ForwardTransport = opts.ForwardTransport
		gcfg.Ready, gcfg.CutOff = d.ready, d.live.CutOff
		gcfg.Health = d.ctl.Tracker()
	} else if err := d.store.BootstrapFences(ctx, cfg.Shards, d.topo.Home); err != nil {
		// Single-region mode: every shard is the local region's, before
		// anything is served; a store bootstrapped with another shard
		// count refuses to start.
		return err
	}
	if d.gw, err = gateway.New(gcfg); err != nil {
		return err
	}
	if err := lifecycle.StartBounded(ctx, d.lifetime, d.gw); err != nil {
		return err
	}
	if err := d.startBackground(ctx, cfg, meter, clock.Or(opts.Clock), log); err != nil {
		return err
	}
	if opts.Listener != nil {
		d.ln = opts.Listener
	} else if d.ln, err = net.Listen("tcp", cfg.Listen); err != nil {
		return err
	}
	srv := &http.Server{Handler: d.gw, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	if cfg.TLS.Enabled() {
		if srv.TLSConfig, err = listenerTLS(cfg.TLS); err != nil {
			d.ln.Close()
			return err
		}
	}
	d.srv = srv // Shutdown waits for serve from here on
	log.InfoContext(ctx, "region serving", "addr", d.ln.Addr().String(), "upstream", upstream.Redacted(),
		"tls", cfg.TLS.Enabled())
	return nil
}

// serve runs the HTTP server until it fails or Shutdown stops it. A
// server that stops without Shutdown (the listener failed) is an error:
// it stops the daemon, Err reports it and idemd run exits non-zero.
func (d *Daemon) serve(ctx context.Context) error {
	defer close(d.served)
	var err error
	if d.srv.TLSConfig != nil {
		err = d.srv.ServeTLS(d.ln, "", "")
	} else {
		err = d.srv.Serve(d.ln)
	}
	if ctx.Err() != nil {
		return nil // Shutdown stopped it
	}
	if err == nil || errors.Is(err, http.ErrServerClosed) {
		err = ErrStopped
	}
	err = fmt.Errorf("daemon: listener %s: %w", d.ln.Addr(), err)
	d.log.Error("gateway stopped serving", "err", err)
	return err
}

// ErrStopped is Err's cause when the server stopped without Close and
// without an error of its own.
var ErrStopped = errors.New("daemon: server stopped unexpectedly")

// Done is closed when the daemon stops serving: after Close or Shutdown
// drained it, after Start's context ended and the daemon stopped, or
// when its listener fails (then call Close or Shutdown to release the
// rest).
func (d *Daemon) Done() <-chan struct{} { return d.run.Done() }

// Err returns why the daemon stopped serving once Done is closed: nil
// after Close or Shutdown, the cause of Start's context when that ended,
// the listener's error when it failed, the start's error when Start
// failed. Before Done it returns nil.
func (d *Daemon) Err() error { return d.run.Err() }

// Addr returns the address the daemon listens on.
func (d *Daemon) Addr() string { return d.ln.Addr().String() }

// Store returns the daemon's store (for tests and tools).
func (d *Daemon) Store() store.Backend { return d.store }
