package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/idemcoord/idemcoord/chaos/unsafemode"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/internal/etcdlocal"
	"github.com/idemcoord/idemcoord/internal/pglocal"
	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/store"
	"github.com/idemcoord/idemcoord/store/backend"

	_ "github.com/idemcoord/idemcoord/patronistore" // the "patroni" backend
	_ "github.com/idemcoord/idemcoord/sqlstore"     // the "postgres" backend
)

// ProcessConfig says where the process cluster finds its idemd and keeps
// its files. The zero value builds idemd from the module source found
// at or above the working directory.
type ProcessConfig struct {
	// Source is the idemcoord module's directory, to build idemd with
	// -tags drill from. Default: FindSource of the working directory.
	Source string
	// Binary is an idemd already built with -tags drill; set, nothing is
	// built and Source is not needed.
	Binary string
	// Progress, when set, is told every 15 s while idemd is being built
	// that the build is still running, then how long it took: a cold
	// build takes about two minutes. Default: nothing is told.
	Progress io.Writer
	// Dir receives each region's configuration and log (<region>.yaml,
	// <region>.log) and is kept. Default: a temporary directory that Stop
	// removes.
	Dir string
}

// Process is the process-level drill cluster: three regions, each its
// own `idemd run` process (built with -tags drill) with its own control
// API; a 3-member etcd, one member per region, each separately killable
// (embedded in the drill's process); one throwaway PostgreSQL; the bank
// and one demo payments server per region (in the drill's process too:
// they are the upstream, not what a drill kills). Every link of every
// region goes through its own toxiproxy proxy (see Toxics): to each etcd
// member, to PostgreSQL, to each other region (its regions list names
// the others through its own proxies, so a forward from one region to
// another can be cut alone) and to its payments server. Clients reach
// the regions at their real addresses, which a restart keeps.
type Process struct {
	pc      ProcessConfig
	opts    Options
	dir     string
	keepDir bool
	bin     string
	secret  string // the HS256 secret (its hex text is the key)

	pg      *pglocal.Server
	ha      *haStore // Options.Store StoreHA: the Patroni cluster
	etcd    *etcdlocal.Cluster
	members *EtcdMembers
	demo    *demo
	demoLog *os.File // <dir>/demo.log when the directory is kept
	toxics  *Toxics
	procs   *Procs
	regions []*procRegion
	cli     *clientv3.Client
	store   store.Backend
	owners  *ownership.Directory
	http    *http.Client

	mu sync.Mutex // serialises the faults that stop or start a region
}

// procRegion is one region's fixed addresses.
type procRegion struct {
	name    string
	listen  string // host:port its gateway listens on
	control string // host:port of its drill control API
	config  string // path of its idemd.yaml
	// log is <dir>/<region>.log, opened for appending: the process writes
	// to it directly (a stopped process blocks no pipe) across restarts.
	log *os.File
}

var (
	_ Cluster     = (*Process)(nil)
	_ Processes   = (*Process)(nil)
	_ Links       = (*Process)(nil)
	_ Etcd        = (*Process)(nil)
	_ CrashPoints = (*Process)(nil)
	_ Clocks      = (*Process)(nil)
	_ Directory   = (*Process)(nil)
	_ Homes       = (*Process)(nil)
)

// StartProcesses starts the process cluster with the zero ProcessConfig
// (idemd built from the module source around the working directory). It
// is a Starter.
func StartProcesses(ctx context.Context, opts Options) (Cluster, error) {
	return ProcessStarter(ProcessConfig{})(ctx, opts)
}

// ProcessStarter returns a Starter of the process cluster configured by
// pc.
func ProcessStarter(pc ProcessConfig) Starter {
	return func(ctx context.Context, opts Options) (Cluster, error) { return startProcesses(ctx, pc, opts) }
}

func startProcesses(ctx context.Context, pc ProcessConfig, opts Options) (_ *Process, err error) {
	if err := checkStore(&opts); err != nil {
		return nil, err
	}
	if opts.Unsafe != "" && opts.Unsafe != UnsafeAsyncReplication {
		if _, err := unsafemode.Wrap(opts.Unsafe, ""); err != nil {
			return nil, err
		}
	}
	if opts.Lease <= 0 {
		opts.Lease = procDefaultLease
	}
	if opts.Policy == "" {
		opts.Policy = "transfer"
	}
	p := &Process{pc: pc, opts: opts, toxics: NewToxics(), procs: NewProcs(), http: &http.Client{Timeout: 5 * time.Second}}
	defer func() {
		if err != nil {
			p.Stop(context.WithoutCancel(ctx))
		}
	}()
	if p.bin, err = drillBinary(ctx, pc); err != nil {
		return nil, err
	}
	if p.dir = pc.Dir; p.dir != "" {
		p.keepDir = true
		err = os.MkdirAll(p.dir, 0o755)
	} else {
		p.dir, err = os.MkdirTemp("", "idemdrill")
	}
	if err != nil {
		return nil, err
	}
	if err := p.startStores(ctx); err != nil {
		return nil, err
	}
	if err := p.writeConfigs(); err != nil {
		return nil, err
	}
	for _, r := range p.regions {
		if err := p.procs.Start(ctx, r.name, p.spec(r)); err != nil {
			return nil, err
		}
	}
	if err := p.settle(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// drillBinary returns pc's idemd, building it when pc names none.
func drillBinary(ctx context.Context, pc ProcessConfig) (string, error) {
	if pc.Binary != "" {
		return pc.Binary, nil
	}
	src, err := workingSource()
	if pc.Source != "" {
		src, err = sourceDir(pc.Source)
	}
	if err != nil {
		return "", err
	}
	return drillIdemd(ctx, src, pc.Progress)
}

// startStores starts PostgreSQL (with the coordinator's schema, applied
// once here rather than by three racing processes), etcd, the demo
// services, and the drill's own connections to them (direct, never
// through a proxy: the drill is not what its faults cut).
func (p *Process) startStores(ctx context.Context) (err error) {
	if p.opts.Store == StoreHA {
		return p.startHAStores(ctx)
	}
	if p.pg, err = pglocal.Start(ctx); err != nil {
		return err
	}
	dsn := p.pg.DSN("postgres")
	if p.store, err = backend.Open(ctx, backend.Options{Store: config.Store{DSN: dsn, GroupCommit: config.GroupCommit{MaxBatch: 1}},
		MaxConns: 8, Migrate: true, Logger: slog.New(slog.DiscardHandler)}); err != nil {
		return err
	}
	if p.etcd, err = etcdlocal.Start(ctx, devcluster.Regions, etcdlocal.Options{}); err != nil {
		return err
	}
	p.members = NewEtcdMembers(p.etcd, devcluster.Regions)
	if p.cli, err = clientv3.New(clientv3.Config{Endpoints: p.etcd.Endpoints(), DialTimeout: 5 * time.Second,
		Logger: zap.NewNop()}); err != nil {
		return err
	}
	p.owners = ownership.NewDirectory(p.cli, p.store, ownership.WithLogger(slog.New(slog.DiscardHandler)))
	p.demo, err = startDemo(ctx, dsn, devcluster.Regions, p.demoLogger())
	return err
}

// demoLogger is the demo services' logger: <dir>/demo.log (JSON) when the
// directory is kept (ProcessConfig.Dir), beside the regions' logs, so an
// intent the upstream kept answering can be traced there; else nothing.
func (p *Process) demoLogger() *slog.Logger {
	if !p.keepDir {
		return slog.New(slog.DiscardHandler)
	}
	f, err := os.OpenFile(filepath.Join(p.dir, "demo.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return slog.New(slog.DiscardHandler)
	}
	p.demoLog = f
	return slog.New(slog.NewJSONHandler(f, nil))
}

// writeConfigs picks each region's addresses, starts every proxy and
// writes each region's idemd.yaml and the shared secret.
func (p *Process) writeConfigs() error {
	b := make([]byte, 32)
	rand.Read(b)
	p.secret = hex.EncodeToString(b)
	secretFile := filepath.Join(p.dir, "hs256.secret")
	if err := os.WriteFile(secretFile, []byte(p.secret), 0o600); err != nil {
		return err
	}
	ports := newFixedPorts()
	for _, name := range devcluster.Regions {
		listen, err := ports.next()
		if err != nil {
			return err
		}
		control, err := ports.next()
		if err != nil {
			return err
		}
		log, err := os.OpenFile(filepath.Join(p.dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		p.regions = append(p.regions, &procRegion{name: name, listen: listen, control: control,
			config: filepath.Join(p.dir, name+".yaml"), log: log})
	}
	for _, r := range p.regions {
		f := regionFile{Region: r.name, Listen: r.listen, SecretFile: secretFile, Policy: p.opts.Policy,
			Lease: p.opts.Lease, UpstreamTimeout: upstreamTimeout(p.opts.Lease)}
		up, err := p.toxics.Add(r.name, "upstream", p.demo.payments[r.name])
		if err != nil {
			return err
		}
		f.Upstream = "http://" + up
		if p.ha != nil {
			dsns, err := p.ha.regionDSNs(p.toxics, r.name)
			if err != nil {
				return err
			}
			for _, c := range p.ha.clusters {
				f.Clusters = append(f.Clusters, storeCluster{Name: c.home, DSN: dsns[c.home]})
			}
		} else if f.DSN, err = p.regionDSN(r.name); err != nil {
			return err
		}
		for i, ep := range p.etcd.Endpoints() {
			addr, err := p.toxics.AddTo(r.name, "etcd", devcluster.Regions[i], strings.TrimPrefix(ep, "http://"))
			if err != nil {
				return err
			}
			f.Etcd = append(f.Etcd, "http://"+addr)
		}
		for _, o := range p.regions {
			if o == r {
				f.Peers = append(f.Peers, peer{Name: o.name, URL: "http://" + o.listen})
				continue
			}
			addr, err := p.toxics.AddTo(r.name, "peer", o.name, o.listen)
			if err != nil {
				return err
			}
			f.Peers = append(f.Peers, peer{Name: o.name, URL: "http://" + addr})
		}
		if err := os.WriteFile(r.config, f.render(), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// region returns the named region.
func (p *Process) region(name string) (*procRegion, error) {
	for _, r := range p.regions {
		if r.name == name {
			return r, nil
		}
	}
	return nil, fmt.Errorf("cluster: no region %q", name)
}

// Regions implements Cluster: the regions' real addresses.
func (p *Process) Regions() []Region {
	out := make([]Region, len(p.regions))
	for i, r := range p.regions {
		out[i] = Region{Name: r.name, URL: "http://" + r.listen}
	}
	return out
}

// Token implements Cluster.
func (p *Process) Token(_ context.Context, subject string) (string, error) {
	return devcluster.Token(p.secret, subject, devTokenTTL)
}

// Tenant implements Cluster.
func (p *Process) Tenant() string { return devcluster.Tenant }

// DSN implements Cluster: the direct URL, not a region's proxy. On the
// replicated store it is the first region's cluster (StoreParts names
// them all and the demo ledger's database).
func (p *Process) DSN() string {
	if p.ha != nil {
		return p.ha.clusters[0].cl.DSN()
	}
	return p.pg.DSN("postgres")
}

// regionDSN returns the store URL region's idemd uses on the one
// PostgreSQL, through its own proxy (its "sql" link).
func (p *Process) regionDSN(region string) (string, error) {
	sql, err := p.toxics.Add(region, "sql", p.pg.Addr())
	if err != nil {
		return "", err
	}
	return strings.Replace(p.pg.DSN("postgres"), p.pg.Addr(), sql, 1), nil
}

// Home implements Homes: a shard's home is the region at its index modulo
// the number of regions (the regions list's order).
func (p *Process) Home(shard int) string { return p.regions[shard%len(p.regions)].name }

// Dir returns the directory holding the regions' configurations and logs.
func (p *Process) Dir() string { return p.dir }

// Stop implements Cluster: it kills every idemd, then stops the proxies,
// the demo services, etcd and PostgreSQL, and removes the temporary
// directory (not a ProcessConfig.Dir).
func (p *Process) Stop(ctx context.Context) error {
	errs := []error{p.procs.Stop(ctx)}
	for _, r := range p.regions {
		r.log.Close()
	}
	p.toxics.Close()
	if p.demo != nil {
		p.demo.close()
	}
	if p.demoLog != nil {
		p.demoLog.Close()
	}
	if p.cli != nil {
		p.cli.Close()
	}
	if p.store != nil {
		p.store.Close()
	}
	if p.etcd != nil {
		p.etcd.Close()
	}
	if p.pg != nil {
		errs = append(errs, p.pg.Close())
	}
	if p.ha != nil {
		for _, c := range p.ha.clusters {
			if c != nil {
				errs = append(errs, c.cl.Stop())
			}
		}
	}
	if p.dir != "" && !p.keepDir {
		os.RemoveAll(p.dir)
	}
	return errors.Join(errs...)
}

// UpstreamTimeout is the endpoint's upstream_timeout in this cluster.
func (p *Process) UpstreamTimeout() time.Duration { return upstreamTimeout(p.opts.Lease) }
