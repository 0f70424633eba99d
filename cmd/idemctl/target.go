package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/devcluster/devstate"
	"github.com/idemcoord/idemcoord/internal/reach"
	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/region"
	"github.com/idemcoord/idemcoord/store"
	"github.com/idemcoord/idemcoord/store/backend"

	// The backends idemctl can open (store.backend): each registers
	// itself.
	_ "github.com/idemcoord/idemcoord/patronistore"
	_ "github.com/idemcoord/idemcoord/sqlstore"
)

// etcdCallTimeout bounds each etcd read or move of a command.
const etcdCallTimeout = 10 * time.Second

// connFlags say which deployment a command works on. The rule that keeps
// an operator off the wrong cluster: a deployment named by any of
// --config, --etcd or --dsn (or their $IDEMCOORD_* variables) is the only
// source of every connection — each part comes from its flag, else from
// the --config file (etcd.endpoints and etcd.tls, store.dsn) — and a part
// neither gives is an error. Only a command given none of them uses the
// running dev cluster.
type connFlags struct {
	config                    string
	etcd                      []string
	etcdCA, etcdCert, etcdKey string
	dsn                       string
	timeout                   time.Duration

	cfg *config.Config // loaded --config
}

// addCommon registers the flags every connecting command has, once.
func (f *connFlags) addCommon(cmd *cobra.Command) {
	if cmd.Flags().Lookup("config") != nil {
		return
	}
	cmd.Flags().StringVar(&f.config, "config", os.Getenv("IDEMCOORD_CONFIG"),
		"a region's idemd.yaml: the regions list, and the etcd and store connections unless flags give them (default $IDEMCOORD_CONFIG)")
	cmd.Flags().DurationVar(&f.timeout, "connect-timeout", reach.DefaultTimeout,
		"bound on connecting to the store and to etcd; a failure names the part, its address and the cause")
}

// addStore registers the store's flags.
func (f *connFlags) addStore(cmd *cobra.Command) {
	f.addCommon(cmd)
	cmd.Flags().StringVar(&f.dsn, "dsn", os.Getenv("IDEMCOORD_DSN"),
		"store URL (default $IDEMCOORD_DSN, else --config's store.dsn, else the running dev cluster's)")
}

// addCluster registers etcd's flags.
func (f *connFlags) addCluster(cmd *cobra.Command) {
	f.addCommon(cmd)
	var def []string
	if v := os.Getenv("IDEMCOORD_ETCD"); v != "" {
		def = strings.Split(v, ",")
	}
	cmd.Flags().StringSliceVar(&f.etcd, "etcd", def,
		"etcd endpoints (default $IDEMCOORD_ETCD, else --config's etcd.endpoints, else the running dev cluster's)")
	cmd.Flags().StringVar(&f.etcdCA, "etcd-cacert", "", "PEM CA bundle that verifies the etcd members (default --config's etcd.tls.ca_file)")
	cmd.Flags().StringVar(&f.etcdCert, "etcd-cert", "", "PEM client certificate for etcd (default --config's etcd.tls.cert_file)")
	cmd.Flags().StringVar(&f.etcdKey, "etcd-key", "", "PEM key of --etcd-cert (default --config's etcd.tls.key_file)")
}

// named reports whether the command was pointed at a deployment.
func (f *connFlags) named() bool {
	return f.config != "" || len(f.etcd) > 0 || f.dsn != "" || f.etcdCA != "" || f.etcdCert != ""
}

// load reads --config once (nil without it).
func (f *connFlags) load() (*config.Config, error) {
	if f.cfg != nil || f.config == "" {
		return f.cfg, nil
	}
	cfg, err := config.Load(f.config)
	if err != nil {
		return nil, configError(f.config, err)
	}
	f.cfg = cfg
	return cfg, nil
}

// configError is the error of a --config file that does not load: its
// problems one per line, in file order, with their field paths and lines,
// exactly as idemd check-config prints them.
func configError(path string, err error) error {
	var ve *config.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("--config: %w", err)
	}
	lines := make([]string, 0, len(ve.Errors))
	for _, fe := range ve.ByLine() {
		lines = append(lines, fe.Located())
	}
	return fmt.Errorf("--config %s: %s (idemd check-config %s says the same):\n%s", path,
		count(len(lines), "error", "errors"), path, strings.Join(lines, "\n"))
}

// dev returns the running dev cluster's state, for a command not pointed
// at a deployment; what says which part was missing.
func (f *connFlags) dev(what string) (devstate.State, error) {
	if f.named() {
		return devstate.State{}, fmt.Errorf("no %s given: pass it, or --config with a region's idemd.yaml; "+
			"idemctl never mixes a named deployment with the dev cluster", what)
	}
	st, err := devState()
	if err != nil {
		if what != "--config" {
			what += " (or --config)"
		}
		return devstate.State{}, fmt.Errorf("%s not set and %w", what, err)
	}
	return st, nil
}

// open connects to the store within --connect-timeout. It never
// migrates: a store without the schema fails with sqlstore.ErrSchemaMissing
// ("run idemctl migrate"). Commands use it through the store contract.
func (f *connFlags) open(ctx context.Context) (store.Backend, error) {
	return f.openWith(ctx, storeOpts{maxConns: 2})
}

// storeOpts are what a command asks of the store it opens.
type storeOpts struct {
	// maxConns is the pool size (per cluster).
	maxConns int
	// migrate applies the schema migrations (idemctl migrate).
	migrate bool
}

// openWith connects to the store through the store/backend registry:
// --dsn is one PostgreSQL database (backend postgres); else --config's
// store section, whatever its backend; else the dev cluster's DSN.
func (f *connFlags) openWith(ctx context.Context, so storeOpts) (store.Backend, error) {
	o, err := f.storeOptions()
	if err != nil {
		return nil, err
	}
	// Each connection first, bounded and named; then the store's own
	// opening (its schema check, or migrations, which may take longer).
	for _, dsn := range storeDSNs(o.Store) {
		verbosef("connecting to store %s", strings.Join(reach.StoreDisplay(dsn), ","))
		if err := reach.Store(ctx, dsn, f.timeoutOr()); err != nil {
			return nil, err
		}
	}
	o.MaxConns, o.Migrate, o.Logger = so.maxConns, so.migrate, libraryLogger()
	o.Store.ConnectTimeout = f.timeoutOr()
	o.Store.GroupCommit = config.GroupCommit{MaxBatch: 1} // a command's few statements: no batching
	return backend.Open(ctx, o)
}

// storeOptions returns the registry options of the store --dsn,
// --config or the dev cluster names.
func (f *connFlags) storeOptions() (backend.Options, error) {
	if f.dsn != "" {
		return backend.Options{Store: config.Store{Backend: backend.Default, DSN: f.dsn}}, nil
	}
	cfg, err := f.load()
	if err != nil {
		return backend.Options{}, err
	}
	if cfg != nil {
		topo, err := region.FromConfig(cfg)
		if err != nil {
			return backend.Options{}, fmt.Errorf("--config: %w", err)
		}
		return backend.Options{Store: cfg.Store, Shards: cfg.Shards, Home: topo.Home}, nil
	}
	st, err := f.dev("--dsn")
	if err != nil {
		return backend.Options{}, err
	}
	if len(st.StoreClusters) > 0 {
		// idemd dev --store ha: its regions' configs name every Patroni
		// cluster; any region's file has the same store section.
		cfg, err := config.Load(st.Configs[devstate.Regions[0]])
		if err != nil {
			return backend.Options{}, fmt.Errorf("dev cluster config: %w", err)
		}
		topo, err := region.FromConfig(cfg)
		if err != nil {
			return backend.Options{}, fmt.Errorf("dev cluster config: %w", err)
		}
		return backend.Options{Store: cfg.Store, Shards: cfg.Shards, Home: topo.Home}, nil
	}
	return backend.Options{Store: config.Store{Backend: backend.Default, DSN: st.DSN}}, nil
}

// storeDSNs returns the DSNs a store section connects to: its dsn, or
// each patroni cluster's.
func storeDSNs(sc config.Store) []string {
	if len(sc.Patroni.Clusters) == 0 {
		return []string{sc.DSN}
	}
	dsns := make([]string, len(sc.Patroni.Clusters))
	for i, c := range sc.Patroni.Clusters {
		dsns[i] = c.DSN
	}
	return dsns
}

// etcdConfig returns the etcd endpoints and TLS: flags, else --config,
// else the running dev cluster's (plain http, no TLS).
func (f *connFlags) etcdConfig() ([]string, config.EtcdTLS, error) {
	cfg, err := f.load()
	if err != nil {
		return nil, config.EtcdTLS{}, err
	}
	endpoints := f.etcd
	var tls config.EtcdTLS
	if cfg != nil {
		tls = cfg.Etcd.TLS
		if len(endpoints) == 0 {
			endpoints = cfg.Etcd.Endpoints
		}
		if len(endpoints) == 0 {
			return nil, tls, fmt.Errorf("--config %s has no etcd.endpoints (a single-region file) and --etcd is not set", f.config)
		}
	}
	if f.etcdCA != "" {
		tls.CAFile = f.etcdCA
	}
	if f.etcdCert != "" || f.etcdKey != "" {
		tls.CertFile, tls.KeyFile = f.etcdCert, f.etcdKey
	}
	if len(endpoints) == 0 {
		st, err := f.dev("--etcd")
		if err != nil {
			return nil, tls, err
		}
		endpoints = st.Etcd
	}
	return endpoints, tls, nil
}

// client connects to etcd and checks, within --connect-timeout, that it
// answers a linearizable read.
func (f *connFlags) client(ctx context.Context) (*clientv3.Client, error) {
	endpoints, tc, err := f.etcdConfig()
	if err != nil {
		return nil, err
	}
	t, err := tc.Client()
	if err != nil {
		return nil, fmt.Errorf("etcd TLS (--etcd-cacert/--etcd-cert/--etcd-key or --config's %w)", err)
	}
	verbosef("connecting to etcd %s", strings.Join(endpoints, ","))
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: f.timeoutOr(), TLS: t, Logger: zap.NewNop()})
	if err != nil {
		return nil, &reach.Error{Part: "etcd", Addrs: endpoints, Err: err}
	}
	err = reach.Step(ctx, "etcd", reach.EtcdAddrs(endpoints), f.timeoutOr(), func(ctx context.Context) error {
		_, err := cli.Get(ctx, ownership.DefaultPrefix, clientv3.WithCountOnly())
		return err
	})
	if err != nil {
		cli.Close()
		return nil, err
	}
	return cli, nil
}

func (f *connFlags) timeoutOr() time.Duration {
	if f.timeout > 0 {
		return f.timeout
	}
	return reach.DefaultTimeout
}

// topology loads the regions list from --config, or from the dev
// cluster's first region's file.
func (f *connFlags) topology() (*region.Topology, *config.Config, error) {
	cfg, err := f.load()
	if err != nil {
		return nil, nil, err
	}
	if cfg == nil {
		st, err := f.dev("--config")
		if err != nil {
			return nil, nil, err
		}
		if cfg, err = config.Load(st.Configs[devstate.Regions[0]]); err != nil {
			return nil, nil, err
		}
	}
	top, err := region.FromConfig(cfg)
	return top, cfg, err
}

// connect loads the topology and connects to etcd: what every read of
// the ownership directory needs first. The caller closes the client.
func (f *connFlags) connect(ctx context.Context) (*region.Topology, *config.Config, *clientv3.Client, error) {
	top, cfg, err := f.topology()
	if err != nil {
		return nil, nil, nil, err
	}
	cli, err := f.client(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	return top, cfg, cli, nil
}

// quiet is the logger of the directory's own progress lines: the command
// prints its result itself (libraryLogger).
func quiet() ownership.Option { return ownership.WithLogger(libraryLogger()) }

// libraryLogger is the logger handed to the packages idemctl calls: their
// lines are in their own vocabulary, so they reach stderr only with
// --verbose.
func libraryLogger() *slog.Logger {
	if !verbose {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// verbose is the root --verbose: library logs and connection steps on
// stderr.
var verbose bool

// verbosef prints a progress line on stderr under --verbose.
func verbosef(format string, args ...any) {
	if verbose {
		fmt.Fprintf(os.Stderr, "idemctl: "+format+"\n", args...)
	}
}

// etcdContext bounds one etcd call of a command.
func etcdContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return context.WithTimeout(cmd.Context(), etcdCallTimeout)
}
