package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/idemcoord/idemcoord/chaos/failpoint"
	"github.com/idemcoord/idemcoord/chaos/unsafemode"
	"github.com/idemcoord/idemcoord/chaos/validate"
	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/internal/pglocal"
)

// Regional is the in-process multi-region dev cluster with the fault
// families it supports: region loss (StopRegion, then StartRegion and a
// fenced failback of the region's home shards once it is up again, a move
// under load), per-region SQL links through toxiproxy, per-region upstream
// links (gateway -> payments), and etcd leader kills. Its regions share a
// process, so they cannot be paused (a zombie needs the process-level
// cluster), and its etcd links are direct (etcd's ports are only known
// once the dev cluster started it).
type Regional struct {
	c       *devcluster.Cluster
	pg      *pglocal.Server
	toxics  *Toxics
	etcd    *EtcdMembers
	links   map[string]*upstreamLink
	startMu sync.Mutex // serialises StopRegion/StartRegion
}

var (
	_ Cluster   = (*Regional)(nil)
	_ Links     = (*Regional)(nil)
	_ Processes = (*Regional)(nil)
	_ Etcd      = (*Regional)(nil)
	_ Homes     = (*Regional)(nil)
	_ Directory = (*Regional)(nil)
)

// regionalFailover shortens the failover controllers' timings so a lost
// region's shards move within a drill's fault window.
var regionalFailover = failover.Config{}

var errNoRegionRunning = errors.New("cluster: no region runs to read the directory")

// StartRegional starts the dev cluster with a throwaway PostgreSQL reached
// by each region through its own proxy. It is a Starter: opts.Policy sets
// the endpoint's failover policy.
func StartRegional(ctx context.Context, opts Options) (_ Cluster, err error) {
	if opts.Unsafe != "" {
		if _, err := unsafemode.Wrap(opts.Unsafe, ""); err != nil {
			return nil, err
		}
	}
	r := &Regional{toxics: NewToxics(), links: map[string]*upstreamLink{}}
	defer func() {
		if err != nil {
			r.Stop(context.WithoutCancel(ctx))
		}
	}()
	if r.pg, err = pglocal.Start(ctx); err != nil {
		return nil, err
	}
	dsn := r.pg.DSN("postgres")
	per := map[string]devcluster.RegionOptions{}
	for _, name := range devcluster.Regions {
		addr, err := r.toxics.Add(name, failpoint.LinkSQL, r.pg.Addr())
		if err != nil {
			return nil, err
		}
		link := newUpstreamLink()
		r.links[name] = link
		ro := devcluster.RegionOptions{DSN: strings.Replace(dsn, r.pg.Addr(), addr, 1), Transport: link}
		if opts.Unsafe != "" {
			ro.UnsafeDrillStore, _ = unsafemode.Wrap(opts.Unsafe, name) // checked above
		}
		per[name] = ro
	}
	r.c, err = devcluster.Start(ctx, devcluster.Options{Logger: slog.New(slog.DiscardHandler), DatabaseURL: dsn,
		UpstreamTimeout: devUpstreamTimeout, Failover: opts.Policy, UpstreamDedup: "operation_id", FailoverTimings: regionalFailover, Region: per})
	if err != nil {
		return nil, err
	}
	r.etcd = NewEtcdMembers(r.c.Etcd, devcluster.Regions)
	return r, nil
}

// Regions implements Cluster.
func (r *Regional) Regions() []Region {
	out := make([]Region, len(r.c.Regions))
	for i, g := range r.c.Regions {
		out[i] = Region{Name: g.Name, URL: g.URL}
	}
	return out
}

// Token implements Cluster.
func (r *Regional) Token(_ context.Context, subject string) (string, error) {
	return r.c.Token(subject, devTokenTTL)
}

// Tenant implements Cluster.
func (r *Regional) Tenant() string { return devcluster.Tenant }

// DSN implements Cluster: the direct URL, not a region's proxy.
func (r *Regional) DSN() string { return r.pg.DSN("postgres") }

// Home implements Homes: a shard's home is the region at its index modulo
// the number of regions.
func (r *Regional) Home(shard int) string {
	return r.c.Topology[shard%len(r.c.Topology)].Name
}

// Stop implements Cluster.
func (r *Regional) Stop(ctx context.Context) error {
	var errs []error
	if r.c != nil {
		errs = append(errs, r.c.Close(ctx))
	}
	r.toxics.Close()
	if r.pg != nil {
		errs = append(errs, r.pg.Close())
	}
	return errors.Join(errs...)
}

// crashInFlight is how long a killed region's upstream calls hang before
// it dies, so it dies with requests in flight.
const crashInFlight = time.Second

// Kill implements Processes: the region dies as if it crashed mid-work.
// Its upstream link hangs first, so requests are in flight inside it;
// then its idemd stops without a drain (connections closed, its liveness
// key gone): their claims stay in progress until their leases lapse and
// another region takes them over.
func (r *Regional) Kill(ctx context.Context, region string) error {
	r.startMu.Lock()
	defer r.startMu.Unlock()
	l, err := r.upstream(region)
	if err != nil {
		return err
	}
	l.set(failpoint.CutBoth, 0, 0)
	defer l.set("", 0, 0)
	if err := clock.Sleep(ctx, clock.Real(), crashInFlight); err != nil {
		return err
	}
	now, cancel := context.WithCancel(context.WithoutCancel(ctx))
	cancel() // no drain: a crash
	if err := r.c.StopRegion(now, region); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// Restart implements Processes: the region starts again, and once it is
// ready its home shards that another region took over are moved back to
// it, fenced and drained (a move under load).
func (r *Regional) Restart(ctx context.Context, region string) error {
	r.startMu.Lock()
	defer r.startMu.Unlock()
	if err := r.c.StartRegion(ctx, region); err != nil {
		return err
	}
	return r.failback(ctx, region)
}

// Pause implements Processes: regions of one process cannot be paused.
func (r *Regional) Pause(context.Context, string) error {
	return fmt.Errorf("%w: the in-process cluster cannot pause one region", failpoint.ErrUnsupported)
}

// Resume implements Processes.
func (r *Regional) Resume(context.Context, string) error { return nil }

// Leader implements Etcd.
func (r *Regional) Leader(ctx context.Context) (string, error) { return r.etcd.Leader(ctx) }

// KillMember implements Etcd.
func (r *Regional) KillMember(ctx context.Context, member string) error {
	return r.etcd.KillMember(ctx, member)
}

// RestartMember implements Etcd.
func (r *Regional) RestartMember(ctx context.Context, member string) error {
	return r.etcd.RestartMember(ctx, member)
}

// Directory implements Directory: the etcd ownership directory as a
// running region's daemon reads it, for the checker's etcd-SQL agreement.
func (r *Regional) Directory(ctx context.Context) (map[int]validate.DirectoryEntry, error) {
	for _, g := range r.c.Regions {
		if g.Daemon == nil {
			continue
		}
		entries, _, err := g.Daemon.Directory().List(ctx)
		if err != nil {
			return nil, err
		}
		out := make(map[int]validate.DirectoryEntry, len(entries))
		for _, e := range entries {
			out[e.Shard] = validate.DirectoryEntry{Owner: e.Owner, Epoch: e.Epoch, State: string(e.State)}
		}
		return out, nil
	}
	return nil, errNoRegionRunning
}

// UpstreamTimeout is the endpoint's upstream_timeout in this cluster.
func (r *Regional) UpstreamTimeout() time.Duration { return devUpstreamTimeout }
