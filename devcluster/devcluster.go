// Package devcluster starts, from nothing, a local three-region idemcoord
// cluster: an embedded etcd cluster (one member per region), a throwaway
// PostgreSQL (or a given database), the demo payments service and bank, and
// one idemd gateway per region, all on loopback. It is `idemd dev`, and the
// end-to-end tests run on it.
package devcluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"text/template"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/daemon"
	"github.com/idemcoord/idemcoord/demo/bank"
	"github.com/idemcoord/idemcoord/demo/payments"
	"github.com/idemcoord/idemcoord/deploy/haproxy"
	"github.com/idemcoord/idemcoord/devcluster/devstate"
	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/internal/etcdlocal"
	"github.com/idemcoord/idemcoord/internal/freeport"
	"github.com/idemcoord/idemcoord/internal/pglocal"
	"github.com/idemcoord/idemcoord/store"
)

// Regions are the dev cluster's regions, in port order (devstate.Regions).
var Regions = devstate.Regions

// Dev cluster identity: tokens for it are signed with its generated secret.
const (
	Issuer   = devstate.Issuer
	Audience = devstate.Audience
)

// DefaultPortBase is the first gateway's port; the others follow, and the
// demo payments service and bank listen at base+100 and base+101.
const DefaultPortBase = 7101

// Options configure a dev cluster.
type Options struct {
	// PortBase is the first gateway's port; 0 picks free ports for
	// everything (tests).
	PortBase int
	// DatabaseURL, if set, is used instead of a throwaway PostgreSQL.
	DatabaseURL string
	// Store is StoreSingle (default: one throwaway PostgreSQL) or StoreHA:
	// one Patroni cluster per home region on the dev etcd (Stores), and
	// the throwaway PostgreSQL holds only the demo services' tables.
	Store string
	// UpstreamTimeout bounds each gateway-to-payments call. Default 10s.
	UpstreamTimeout time.Duration
	// BankTimeout bounds each payments-to-bank call. Default 10s.
	BankTimeout time.Duration
	// Hold is how long a held payment (POST /v1/held-payments, the
	// create-held-payment endpoint) stays reserved, and so cancellable
	// with DELETE /v1/operations/{id}, before it is captured. Default
	// payments.DefaultHold; keep it under UpstreamTimeout.
	Hold time.Duration
	// Logger receives every component's logs. Default slog.Default().
	Logger *slog.Logger
	// Transport, if set, carries the gateways' upstream calls.
	Transport http.RoundTripper
	// Failover is the failover policy of the create-payment and
	// create-held-payment endpoints: "reject" (default: a payment is a
	// high-risk write) or "transfer". The create-transfer endpoint
	// (POST /v1/transfers) is always "transfer", so that the two
	// policies can be seen side by side.
	Failover string
	// UpstreamDedup is the payment endpoints' upstream_dedup: "none"
	// (default) or "operation_id", which the demo payments service honours
	// (payments.operation_id is unique): an intent left in flight by a
	// region that lost its shard is then resolved by the new owner at once
	// instead of after its lease (docs/failover.md).
	UpstreamDedup string
	// FailoverTimings overrides the failover controllers' timings (tests
	// shorten the hold time of a recovering region); zero fields take the
	// defaults.
	FailoverTimings failover.Config
	// Region overrides, per region name, what that region connects
	// through, so a drill or a test can cut one region off alone.
	Region map[string]RegionOptions
	// HoldGateways keeps the gateways from accepting connections, after
	// Start returns too, until Cluster.OpenGateways (gate.go): `idemd dev`
	// opens them once its state file is written. Default false: they
	// serve from their daemon's start.
	HoldGateways bool
}

// RegionOptions are one region's own connections. Zero fields take the
// cluster's defaults.
type RegionOptions struct {
	// DSN is the store URL the region connects to (default: the
	// cluster's DSN).
	DSN string
	// Etcd are the etcd endpoints the region connects to (default: every
	// member).
	Etcd []string
	// Transport carries the region's upstream calls (default
	// Options.Transport).
	Transport http.RoundTripper
	// ForwardTransport carries requests the region forwards to the
	// owner region's gateway (default: a transport of its own).
	ForwardTransport http.RoundTripper
	// UnsafeDrillStore is passed to the region's daemon
	// (daemon.Options.UnsafeDrillStore). Drills only; never in production.
	UnsafeDrillStore func(store.Store) store.Store
}

// Region is one running region.
type Region struct {
	Name string
	URL  string
	// ConfigPath is the region's idemd.yaml in the cluster's directory.
	ConfigPath string
	Daemon     *daemon.Daemon
}

// Cluster is a running dev cluster.
type Cluster struct {
	Regions     []*Region
	PaymentsURL string
	BankURL     string
	// ControlURL serves POST /regions/{name}/stop, /kill and /start, POST
	// /bank/hang and /bank/heal, and GET / (the list).
	ControlURL string
	Bank       *bank.Server
	// Postgres is the throwaway server (nil with Options.DatabaseURL).
	Postgres *pglocal.Server
	// DSN is the store every region uses; with StoreHA (where each region
	// routes each shard to its home region's cluster) the multi-host DSN
	// of the first region's Patroni cluster.
	DSN string
	// DemoDSN is the database of the demo payments service and bank (DSN
	// unless StoreHA).
	DemoDSN string
	// Stores are the Patroni clusters, one per home region in Regions
	// order (Options.Store StoreHA; nil otherwise).
	Stores []*StoreCluster
	Etcd   *etcdlocal.Cluster
	// Pool is a connection pool for inspection (payments, bank charges).
	Pool *pgxpool.Pool
	// Topology is the regions list every region's configuration carries:
	// names in order (the order decides each shard's home) and gateway
	// URLs.
	Topology []config.Region
	// Entry is the global entry in front of the regions, once StartEntry
	// started it (nil otherwise); EntryURL is its URL.
	Entry    *haproxy.Entry
	EntryURL string
	// Dir holds the cluster's temporary files (region configs, the secret
	// file); Close removes it.
	Dir string

	portBase int
	opts     Options
	gate     *gate // nil unless Options.HoldGateways
	secret   []byte
	servers  []*http.Server
}

// Start brings the whole cluster up. Close it to stop everything and remove
// its temporary data.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	if opts.UpstreamTimeout == 0 {
		opts.UpstreamTimeout = 10 * time.Second
	}
	if opts.BankTimeout == 0 {
		opts.BankTimeout = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Failover == "" {
		opts.Failover = "reject"
	}
	if opts.UpstreamDedup == "" {
		opts.UpstreamDedup = "none"
	}
	switch opts.Store {
	case "":
		opts.Store = StoreSingle
	case StoreSingle:
	case StoreHA:
		if opts.DatabaseURL != "" {
			return nil, errors.New("devcluster: store ha starts its own PostgreSQL clusters; it takes no database URL")
		}
	default:
		return nil, fmt.Errorf("devcluster: store %q: want %q or %q", opts.Store, StoreSingle, StoreHA)
	}
	// A busy port found after PostgreSQL and etcd started would cost
	// seconds and leave the user a bind error without the way out.
	if err := CheckPorts(opts.PortBase); err != nil {
		return nil, err
	}
	started := &Cluster{secret: make([]byte, 32), portBase: opts.PortBase, opts: opts}
	if opts.HoldGateways {
		started.gate = newGate()
	}
	c = started
	defer func() {
		if err != nil {
			started.Close(context.Background()) // whatever was started so far
		}
	}()
	rand.Read(c.secret)
	if c.Dir, err = os.MkdirTemp("", "idemdev"); err != nil {
		return nil, err
	}
	if c.DSN = opts.DatabaseURL; c.DSN == "" {
		if c.Postgres, err = pglocal.Start(ctx); err != nil {
			return nil, err
		}
		c.DSN = c.Postgres.DSN("postgres")
	}
	c.DemoDSN = c.DSN
	if c.Etcd, err = etcdlocal.Start(ctx, Regions, etcdlocal.Options{}); err != nil {
		return nil, err
	}
	if opts.Store == StoreHA {
		if err := c.startStores(ctx, opts.Logger); err != nil {
			return nil, err
		}
		// Each region's config names every cluster (store.backend
		// patroni), which routes each shard to its home region's cluster;
		// DSN is the first cluster's, for tools that take one database.
		c.DSN = c.Stores[0].DSN()
	}
	if err := c.startDemo(ctx, opts); err != nil {
		return nil, err
	}
	secretFile := filepath.Join(c.Dir, "hs256.secret")
	if err := os.WriteFile(secretFile, []byte(hex.EncodeToString(c.secret)), 0o600); err != nil {
		return nil, err
	}
	// Every region's file lists every region's URL, so the gateways are
	// listening before any configuration is written.
	listeners := make([]net.Listener, len(Regions))
	defer func() {
		for _, ln := range listeners {
			if ln != nil {
				ln.Close() // not handed to a daemon
			}
		}
	}()
	// Without a port base the regions get ports below the kernel's
	// ephemeral range (freeport): a region killed and restarted in a
	// drill binds its port again, and a port from that range could be an
	// outgoing connection's by then.
	ports := make([]int, len(Regions))
	if opts.PortBase != 0 {
		for i := range ports {
			ports[i] = opts.PortBase + i
		}
	} else if ports, err = freeport.Pick(len(Regions)); err != nil {
		return nil, err
	}
	for i, name := range Regions {
		listen := fmt.Sprintf("127.0.0.1:%d", ports[i])
		if listeners[i], err = net.Listen("tcp", listen); err != nil {
			return nil, fmt.Errorf("region %s: %w (choose other ports with --port-base)", name, err)
		}
		c.Topology = append(c.Topology, config.Region{Name: name, URL: "http://" + listeners[i].Addr().String()})
	}
	for i, name := range Regions {
		ro := opts.Region[name]
		if ro.Transport == nil {
			ro.Transport = opts.Transport
		}
		path, err := c.writeRegionConfig(name, listeners[i].Addr().String(), secretFile, ro, opts)
		if err != nil {
			return nil, err
		}
		cfg, err := config.Load(path)
		if err != nil {
			return nil, err
		}
		ln := listeners[i]
		if c.gate != nil {
			ln = c.gate.wrap(ln)
		}
		d, err := daemon.Start(ctx, cfg, daemon.Options{Logger: opts.Logger, Transport: ro.Transport, Migrate: true, Failover: opts.FailoverTimings,
			ForwardTransport: ro.ForwardTransport, Listener: ln, UnsafeDrillStore: ro.UnsafeDrillStore})
		listeners[i] = nil // the daemon closes it from now on
		if err != nil {
			return nil, fmt.Errorf("region %s: %w", name, err)
		}
		c.Regions = append(c.Regions, &Region{Name: name, URL: "http://" + d.Addr(), ConfigPath: path, Daemon: d})
	}
	if c.ControlURL, err = c.startControl(opts.PortBase); err != nil {
		return nil, err
	}
	if err := c.settle(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// startDemo starts the bank and the payments service.
func (c *Cluster) startDemo(ctx context.Context, opts Options) error {
	pc, err := pgxpool.ParseConfig(c.DemoDSN)
	if err != nil {
		return err
	}
	pc.MaxConns = 32
	if c.Pool, err = pgxpool.NewWithConfig(ctx, pc); err != nil {
		return err
	}
	if err := errors.Join(bank.Migrate(ctx, c.Pool), payments.Migrate(ctx, c.Pool)); err != nil {
		return err
	}
	c.Bank = bank.New(c.Pool, bank.Options{Logger: opts.Logger.With("service", "bank")})
	bankAddr, paymentsAddr := "127.0.0.1:0", "127.0.0.1:0"
	if opts.PortBase != 0 {
		paymentsAddr = fmt.Sprintf("127.0.0.1:%d", opts.PortBase+100)
		bankAddr = fmt.Sprintf("127.0.0.1:%d", opts.PortBase+101)
	}
	if c.BankURL, err = c.serve(bankAddr, c.Bank); err != nil {
		return err
	}
	pay := payments.New(c.Pool, c.BankURL, payments.Options{BankTimeout: opts.BankTimeout, Hold: opts.Hold,
		Logger: opts.Logger.With("service", "payments")})
	c.PaymentsURL, err = c.serve(paymentsAddr, pay)
	return err
}

func (c *Cluster) serve(addr string, h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	c.servers = append(c.servers, srv)
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), nil
}

// regionTemplate is each region's idemd.yaml: the same file a user writes.
var regionTemplate = template.Must(template.New("region").Parse(`region: {{.Region}}
listen: {{.Listen}}
upstream: {{.Upstream}}
store:
{{- if .Clusters}}
  # one Patroni cluster per home region: each shard's records and fence
  # live in its home region's cluster (idemd dev --store ha)
  backend: patroni
  patroni:
    clusters:
{{- range .Clusters}}
      - {name: {{.Name}}, dsn: "{{.DSN}}", regions: [{{.Name}}], rest: [{{range $i, $u := .REST}}{{if $i}}, {{end}}"{{$u}}"{{end}}]}
{{- end}}
{{- else}}
  dsn: {{.DSN}}
{{- end}}
  max_conns: 16
etcd:
  endpoints: [{{.Etcd}}]
# every region's file lists the same regions in the same order: the order
# decides each shard's home region
regions:
{{- range .Regions}}
  - {name: {{.Name}}, url: "{{.URL}}"}
{{- end}}
routing: forward
auth:
  issuer: ` + Issuer + `
  audience: ` + Audience + `
  hs256_secret_file: {{.SecretFile}}
defaults:
  ttl: 24h
  lease: 30s
  upstream_timeout: {{.UpstreamTimeout}}
endpoints:
  - name: create-payment
    method: POST
    path: /v1/payments
    key: required
    fingerprint:
      exclude: [/client_timestamp]
    # the payments service answers 409 while the same operation is still
    # running there: not a final answer, run it again on the next retry
    retry_statuses: [408, 409, 425, 429, 500, 502-504]
    response_headers: [Content-Type, Location]
    failover: {{.Failover}}
    resolve_path: /internal/operations/{operation_id}
    upstream_dedup: {{.UpstreamDedup}}
  # the same payment, held (reserved, reversible) before its capture
  # (irreversible): answered 202, cancellable with DELETE /v1/operations/{id}
  # until the capture
  - name: create-held-payment
    method: POST
    path: /v1/held-payments
    key: required
    async: true
    fingerprint:
      exclude: [/client_timestamp]
    retry_statuses: [408, 409, 425, 429, 500, 502-504]
    response_headers: [Content-Type, Location]
    failover: {{.Failover}}
    resolve_path: /internal/operations/{operation_id}
    upstream_dedup: {{.UpstreamDedup}}
    cancel_path: /internal/operations/{operation_id}/cancel
  # the same charge as a transfer, with the other failover policy: once a
  # lost region's shards moved, the new owner serves it at once (transfer),
  # where create-payment refuses until failback or accept (reject); the
  # payments service deduplicates by operation id, so a transfer left in
  # flight by the lost region is resolved by the new owner at once
  - name: create-transfer
    method: POST
    path: /v1/transfers
    key: required
    fingerprint:
      exclude: [/client_timestamp]
    retry_statuses: [408, 409, 425, 429, 500, 502-504]
    response_headers: [Content-Type, Location]
    failover: transfer
    resolve_path: /internal/operations/{operation_id}
    upstream_dedup: operation_id
`))

// writeRegionConfig writes region's idemd.yaml into the cluster's directory
// and returns its path.
func (c *Cluster) writeRegionConfig(region, listen, secretFile string, ro RegionOptions, opts Options) (string, error) {
	endpoints := ro.Etcd
	if len(endpoints) == 0 {
		endpoints = c.Etcd.Endpoints()
	}
	dsn := ro.DSN
	if dsn == "" {
		dsn = c.DSN
	}
	var b bytes.Buffer
	err := regionTemplate.Execute(&b, map[string]any{"Region": region, "Listen": listen, "Upstream": c.PaymentsURL,
		"DSN": dsn, "Etcd": strings.Join(endpoints, ", "), "SecretFile": secretFile,
		"UpstreamTimeout": opts.UpstreamTimeout.String(), "Regions": c.Topology, "Failover": opts.Failover,
		"UpstreamDedup": opts.UpstreamDedup, "Clusters": c.storeClustersFor(ro)})
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.Dir, region+".yaml")
	return path, os.WriteFile(path, b.Bytes(), 0o600)
}

// Token returns a bearer token for actor (tenant "demo") valid for ttl.
func (c *Cluster) Token(actor string, ttl time.Duration) (string, error) {
	return Token(hex.EncodeToString(c.secret), actor, ttl)
}

// Token is devstate.Token.
func Token(hexSecret, actor string, ttl time.Duration) (string, error) {
	return devstate.Token(hexSecret, actor, ttl)
}

// Close stops everything and removes the cluster's temporary data.
func (c *Cluster) Close(ctx context.Context) error {
	var errs []error
	if c.Entry != nil {
		errs = append(errs, c.Entry.Close())
	}
	for _, r := range c.Regions {
		if r.Daemon != nil {
			errs = append(errs, r.Daemon.Shutdown(ctx))
		}
	}
	for _, s := range c.servers {
		errs = append(errs, s.Shutdown(ctx))
	}
	if c.Pool != nil {
		c.Pool.Close()
	}
	errs = append(errs, c.closeStores()) // before etcd, their DCS
	if c.Etcd != nil {
		c.Etcd.Close()
	}
	if c.Postgres != nil {
		errs = append(errs, c.Postgres.Close())
	}
	if c.Dir != "" {
		os.RemoveAll(c.Dir)
	}
	return errors.Join(errs...)
}
