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
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	clientv3 "go.etcd.io/etcd/client/v3"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/idemcoord/idemcoord/authn"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/crdb"
	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/region"
)

// LivenessPrefix is where instances keep their liveness keys in etcd:
// LivenessPrefix + region + "/" + worker, attached to a session lease
// (ownership.LivenessKey under ownership.DefaultPrefix).
const LivenessPrefix = ownership.DefaultPrefix + "liveness/"

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
}

// Daemon is one running region instance.
type Daemon struct {
	cfg   *config.Config
	store *crdb.Store
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
	mp      *sdkmetric.MeterProvider
	served  chan error
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
	started := &Daemon{cfg: cfg, opts: opts, served: make(chan error, 1)}
	d = started
	defer func() {
		if err != nil {
			started.Close(context.Background()) // whatever was opened so far
		}
	}()
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, err
	}
	d.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	meter := d.mp.Meter("github.com/idemcoord/idemcoord")
	d.store, err = crdb.Open(ctx, crdb.Config{DSN: cfg.Store.DSN, MaxConns: int32(cfg.Store.MaxConns),
		Meter: meter, Logger: log})
	if err != nil {
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
	gcfg := gateway.Config{
		Region: cfg.Region, Worker: cfg.WorkerName(), Shards: cfg.Shards, Store: d.store, Auth: verifier,
		Endpoints: cfg.Endpoints, Next: gateway.NewProxy(upstream, opts.Transport),
		Logger: log, Meter: meter, Metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
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
	if opts.Listener != nil {
		d.ln = opts.Listener
	} else if d.ln, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, err
	}
	d.srv = &http.Server{Handler: d.gw, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go func() { d.served <- d.srv.Serve(d.ln) }()
	log.InfoContext(ctx, "region serving", "addr", d.ln.Addr().String(), "upstream", upstream.Redacted())
	return d, nil
}

// Addr returns the address the daemon listens on.
func (d *Daemon) Addr() string { return d.ln.Addr().String() }

// Store returns the daemon's store (for tests and tools).
func (d *Daemon) Store() *crdb.Store { return d.store }

// Close stops serving (in-flight requests get until ctx ends), waits for
// background executions, revokes the liveness lease and closes the store.
func (d *Daemon) Close(ctx context.Context) error {
	var errs []error
	if d.srv != nil {
		errs = append(errs, d.srv.Shutdown(ctx))
	}
	if d.gw != nil {
		d.gw.Close()
	}
	if d.stopCtl != nil {
		d.stopCtl()
		<-d.ctl.Done()
	}
	if d.live != nil {
		d.live.Close()
	}
	if d.cache != nil {
		d.cache.Close()
	}
	if d.etcd != nil {
		d.etcd.Close()
	}
	if d.store != nil {
		d.store.Close()
	}
	if d.mp != nil {
		errs = append(errs, d.mp.Shutdown(ctx))
	}
	return errors.Join(errs...)
}
