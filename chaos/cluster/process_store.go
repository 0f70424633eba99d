package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/idemcoord/idemcoord/chaos/failpoint"
	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/internal/etcdlocal"
	"github.com/idemcoord/idemcoord/internal/patronilocal"
	"github.com/idemcoord/idemcoord/internal/pglocal"
	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/store/backend"
)

// UnsafeAsyncReplication is the unsafe mode of the replicated store (it
// starts the cluster with Options.Store StoreHA): replication is
// asynchronous (synchronous_mode off, so not strict either), and before a
// primary is killed its standbys are lost first (its replication link is
// cut for storeUnsafeLag while it keeps acknowledging commits). The
// standby promoted then lacks writes the coordinator acknowledged, and
// the old primary's pg_rewind discards them: the drill must count them in
// acked_lost.
const UnsafeAsyncReplication = "async-replication"

// Links of the replicated store, each member's (named by its region):
// "pgin" is the proxy in front of the member that its replicas and
// pg_rewind dial (its advertised connect_address), "dcs" its Patroni's
// links to each etcd member. A region's idemd reaches each member through
// its own "sql" link (one proxy per member).
const (
	linkPGIn failpoint.Link = "pgin"
	linkDCS  failpoint.Link = "dcs"
)

// Timings of the replicated store in drills.
const (
	// storeRTT is the latency put on every inter-region store link: the
	// replication links (each member's "pgin") and each region's client
	// links to members in other regions. The synchronous commit pays it
	// once per write.
	storeRTT = 10 * time.Millisecond
	// storeUnsafeLag is how long, in UnsafeAsyncReplication, the primary
	// commits alone before it is killed.
	storeUnsafeLag = 3 * time.Second
	// storeFailoverWait bounds the wait for a successor and for the first
	// write committed on it.
	storeFailoverWait = 90 * time.Second
	// storePoll is how often the store's state is polled.
	storePoll = 100 * time.Millisecond
)

// checkStore validates opts.Store and the unsafe mode that needs it.
func checkStore(opts *Options) error {
	if opts.Unsafe == UnsafeAsyncReplication && opts.Store == "" {
		opts.Store = StoreHA
	}
	switch opts.Store {
	case "", StoreSingle, StoreHA:
	default:
		return fmt.Errorf("cluster: store must be %s or %s, got %q", StoreSingle, StoreHA, opts.Store)
	}
	if opts.Unsafe == UnsafeAsyncReplication && opts.Store != StoreHA {
		return fmt.Errorf("cluster: unsafe mode %s needs store %s", UnsafeAsyncReplication, StoreHA)
	}
	return nil
}

// StoreFailover is one failover of the replicated store a fault caused.
type StoreFailover struct {
	// Fault is the fault's kind; Cluster the Patroni cluster it hit (named
	// by its home region); Old the member it hit (the primary), New the
	// member promoted.
	Fault, Cluster, Old, New string
	// Death is when the primary stopped serving (killed, stopped, cut);
	// Promoted when the successor ran as primary; FirstCommit the first
	// write committed on it (a coordinator record written after Death),
	// zero if none was seen within storeFailoverWait.
	Death, Promoted, FirstCommit time.Time
	// OldTimeline and NewTimeline are the timelines of the old primary
	// once it rejoined and of the new primary: equal when it rejoined the
	// successor's history (a zombie must).
	OldTimeline, NewTimeline int
	// Rejoined is whether the old member streams from the successor again.
	Rejoined bool
}

// StoreFailovers is implemented by a cluster on the replicated store: the
// failovers its faults caused, oldest first.
type StoreFailovers interface {
	StoreFailovers() []StoreFailover
}

// haStore is the process cluster's replicated store, as `idemd dev
// --store ha` runs it: one Patroni cluster per home region (its shards'
// records and fences), each of three members, its first primary in its
// home region, the other two in the other regions (so its synchronous
// standby is in another region). Every region's idemd uses store.backend
// patroni over all three. A store fault hits the cluster homed in the
// fault's region: only the actors whose shards are homed there lose
// their store.
type haStore struct {
	clusters []*haCluster // devcluster.Regions order
	async    bool

	mu        sync.Mutex
	failovers []*StoreFailover
	done      sync.WaitGroup // failover measurements in progress
}

// haCluster is one home region's Patroni cluster.
type haCluster struct {
	home  string
	cl    *patronilocal.Cluster
	async bool
}

var _ StoreFailovers = (*Process)(nil)

// storeHome is a shard's home region, as every region's idemd sees it
// (its regions list in devcluster.Regions' order; Process.Home once the
// regions are configured).
func storeHome(shard int) string { return devcluster.Regions[shard%len(devcluster.Regions)] }

// storeMemberName names home's cluster member in region: unique across
// the clusters, since the member's proxies are named by it.
func storeMemberName(home, region string) string { return home + "-" + region }

// startHAStores starts etcd, the Patroni clusters on it (each member's
// DCS and inbound replication links through proxies), the coordinator's
// schema in each, the demo services and the drill's own connections.
func (p *Process) startHAStores(ctx context.Context) (err error) {
	if p.etcd, err = etcdlocal.Start(ctx, devcluster.Regions, etcdlocal.Options{}); err != nil {
		return err
	}
	p.members = NewEtcdMembers(p.etcd, devcluster.Regions)
	if p.cli, err = clientv3.New(clientv3.Config{Endpoints: p.etcd.Endpoints(), DialTimeout: 5 * time.Second,
		Logger: zap.NewNop()}); err != nil {
		return err
	}
	async := p.opts.Unsafe == UnsafeAsyncReplication
	p.ha = &haStore{async: async}
	type started struct {
		i   int
		c   *haCluster
		err error
	}
	results := make(chan started, len(devcluster.Regions))
	for i, home := range devcluster.Regions {
		cfg, err := p.haClusterConfig(home, async)
		if err != nil {
			return err
		}
		go func() {
			cl, err := patronilocal.Start(ctx, cfg)
			if err != nil {
				results <- started{i: i, err: fmt.Errorf("store cluster %s: %w", home, err)}
				return
			}
			c := &haCluster{home: home, cl: cl, async: async}
			results <- started{i: i, c: c, err: c.failback(ctx, home)}
		}()
	}
	p.ha.clusters = make([]*haCluster, len(devcluster.Regions))
	var errs []error
	for range devcluster.Regions {
		r := <-results
		p.ha.clusters[r.i] = r.c
		errs = append(errs, r.err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if p.store, err = backend.Open(ctx, backend.Options{Store: p.ha.storeConfig(func(c *haCluster) (string, error) {
		return c.cl.DSN(), nil
	}), Shards: shard.DefaultCount, Home: storeHome, MaxConns: 8, Migrate: true,
		Logger: slog.New(slog.DiscardHandler)}); err != nil {
		return err
	}
	p.owners = ownership.NewDirectory(p.cli, p.store, ownership.WithLogger(slog.New(slog.DiscardHandler)))
	// The demo services (the upstream) keep their tables in a PostgreSQL
	// of their own: they are not what a store drill kills, and on one of
	// the store's clusters a failover there would stop every region's
	// upstream and hide what the other clusters' actors got.
	if p.pg, err = pglocal.Start(ctx); err != nil {
		return err
	}
	p.demo, err = startDemo(ctx, p.pg.DSN("postgres"), devcluster.Regions, p.demoLogger())
	return err
}

// haClusterConfig is home's Patroni cluster: its member in home first (the
// first primary), then one in each other region, every member's
// advertised address and DCS links through proxies.
func (p *Process) haClusterConfig(home string, async bool) (patronilocal.Config, error) {
	cfg := patronilocal.DefaultConfig()
	cfg.Scope, cfg.Namespace = "idemdrill-"+home, "/idemdrill-patroni/"
	cfg.EtcdEndpoints = p.etcd.Endpoints()
	// Quorum commit (ANY 1 of the two standbys, strict): a region lost
	// with one cluster's standby in it stalls none of that cluster's
	// commits, where a named synchronous standby's loss stalls them until
	// Patroni names the other (as deploy/patroni runs).
	cfg.Async, cfg.Strict, cfg.Quorum = async, !async, !async
	cfg.Advertise = func(member, listen string) (string, error) {
		addr, err := p.toxics.Add(member, linkPGIn, listen)
		if err != nil {
			return "", err
		}
		return addr, p.toxics.Base(proxyName(member, linkPGIn), storeRTT)
	}
	regions := []string{home}
	for _, r := range devcluster.Regions {
		if r != home {
			regions = append(regions, r)
		}
	}
	for _, r := range regions {
		m := patronilocal.MemberSpec{Name: storeMemberName(home, r), Region: r}
		for i, ep := range p.etcd.Endpoints() {
			addr, err := p.toxics.AddTo(m.Name, linkDCS, devcluster.Regions[i], strings.TrimPrefix(ep, "http://"))
			if err != nil {
				return cfg, err
			}
			m.EtcdEndpoints = append(m.EtcdEndpoints, "http://"+addr)
		}
		cfg.Members = append(cfg.Members, m)
	}
	return cfg, nil
}

// ProbeStore implements ProbeStore: on the replicated store, the patroni
// backend over every cluster with the shards' homes the regions' idemd
// use; on the one PostgreSQL, ok is false (DSN is the store).
func (p *Process) ProbeStore() (backend.Options, bool) {
	if p.ha == nil {
		return backend.Options{}, false
	}
	return backend.Options{Store: p.ha.storeConfig(func(c *haCluster) (string, error) {
		return c.cl.DSN(), nil
	}), Shards: shard.DefaultCount, Home: storeHome, MaxConns: 4, Logger: slog.New(slog.DiscardHandler)}, true
}

var _ ProbeStore = (*Process)(nil)

// storeConfig is the store block of the patroni backend over the
// clusters, each cluster's DSN from dsn; the audit of repairs that are
// about no one shard goes to the first region's cluster.
func (h *haStore) storeConfig(dsn func(*haCluster) (string, error)) config.Store {
	st := config.Store{Backend: "patroni", GroupCommit: config.GroupCommit{MaxBatch: 1},
		Patroni: config.PatroniStore{AuditCluster: h.clusters[0].home}}
	for _, c := range h.clusters {
		d, err := dsn(c)
		if err != nil {
			d = "" // the caller's dsn reported it already
		}
		st.Patroni.Clusters = append(st.Patroni.Clusters, config.PatroniCluster{Name: c.home, DSN: d})
	}
	return st
}

// cluster returns the cluster homed in region.
func (h *haStore) cluster(region string) (*haCluster, error) {
	for _, c := range h.clusters {
		if c.home == region {
			return c, nil
		}
	}
	return nil, fmt.Errorf("cluster: no store cluster homed in region %q", region)
}

// regionDSNs are region's multi-host URLs, one per cluster, over every
// member through region's own "sql" proxies (its own region's member
// first; the others' with the inter-region latency), connecting only to
// the one accepting writes.
func (h *haStore) regionDSNs(t *Toxics, region string) (map[string]string, error) {
	out := map[string]string{}
	for _, c := range h.clusters {
		dsn, err := c.regionDSN(t, region)
		if err != nil {
			return nil, err
		}
		out[c.home] = dsn
	}
	return out, nil
}

func (c *haCluster) regionDSN(t *Toxics, region string) (string, error) {
	members := c.cl.Members()
	slices.SortStableFunc(members, func(a, b patronilocal.MemberSpec) int {
		switch {
		case a.Region == region && b.Region != region:
			return -1
		case b.Region == region && a.Region != region:
			return 1
		}
		return 0
	})
	var hosts []string
	for _, m := range members {
		listen, err := c.cl.ListenAddr(m.Name)
		if err != nil {
			return "", err
		}
		addr, err := t.AddTo(region, failpoint.LinkSQL, m.Name, listen)
		if err != nil {
			return "", err
		}
		if m.Region != region {
			if err := t.Base(proxyName(region, failpoint.LinkSQL)+"-"+m.Name, storeRTT); err != nil {
				return "", err
			}
		}
		hosts = append(hosts, addr)
	}
	return "postgres://postgres@" + strings.Join(hosts, ",") +
		"/postgres?sslmode=disable&connect_timeout=2&target_session_attrs=read-write", nil
}

// memberIn returns the cluster's member in region.
func (c *haCluster) memberIn(region string) (string, error) {
	for _, m := range c.cl.Members() {
		if m.Region == region {
			return m.Name, nil
		}
	}
	return "", fmt.Errorf("cluster: store cluster %s has no member in region %q", c.home, region)
}

// failback hands the primary to region's member by a planned switchover
// (at start, so the primary begins in the first region). In quorum
// commit any standby may be the candidate. Patroni switches a cluster in
// synchronous_mode on over only to its synchronous standby, so there,
// when the member is not it, both standbys are made synchronous for the
// switchover (synchronous_node_count 2) and the count is set back after.
func (c *haCluster) failback(ctx context.Context, region string) error {
	home, err := c.memberIn(region)
	if err != nil {
		return err
	}
	if err := c.cl.WaitHealthy(ctx); err != nil {
		return err
	}
	if pr, err := c.cl.Primary(ctx); err != nil || pr.Name == home {
		return err
	}
	if !c.async && !c.cl.Quorum() {
		if err := c.patchConfig(ctx, `{"synchronous_node_count":2}`); err != nil {
			return err
		}
		defer c.patchConfig(context.WithoutCancel(ctx), `{"synchronous_node_count":1}`)
		if err := c.waitRole(ctx, home, patronilocal.RoleSyncStandby); err != nil {
			return err
		}
	}
	return c.cl.Switchover(ctx, home)
}

// patchConfig changes the cluster's dynamic configuration in the DCS
// (Patroni's REST PATCH /config, as `patronictl edit-config`).
func (c *haCluster) patchConfig(ctx context.Context, body string) error {
	var errs []error
	for _, base := range c.cl.RESTURLs() {
		req, err := http.NewRequestWithContext(ctx, http.MethodPatch, base+"/config", strings.NewReader(body))
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		errs = append(errs, fmt.Errorf("cluster: PATCH %s/config: %s", base, resp.Status))
	}
	return errors.Join(errs...)
}

// waitRole waits until member has role.
func (c *haCluster) waitRole(ctx context.Context, member, role string) error {
	ctx, cancel := context.WithTimeout(ctx, storeFailoverWait)
	defer cancel()
	for {
		if ms, err := c.cl.Status(ctx); err == nil {
			for _, m := range ms {
				if m.Name == member && m.Role == role && m.State == patronilocal.StateStreaming {
					return nil
				}
			}
		}
		if err := clock.Sleep(ctx, clock.Real(), storePoll); err != nil {
			return fmt.Errorf("cluster: store member %s never became %s: %w", member, role, err)
		}
	}
}

// store returns the replicated store, or an error naming the option a
// store fault needs.
func (p *Process) haStore() (*haStore, error) {
	if p.ha == nil {
		return nil, fmt.Errorf("%w: the cluster runs on one PostgreSQL; store faults need --store %s",
			failpoint.ErrUnsupported, StoreHA)
	}
	return p.ha, nil
}

// hit finds the primary of the store cluster homed in region, applies fn
// to it and starts measuring the failover that follows.
func (p *Process) hit(ctx context.Context, kind failpoint.Kind, region string,
	fn func(c *haCluster, member string) error) (string, error) {
	h, err := p.haStore()
	if err != nil {
		return "", err
	}
	c, err := h.cluster(region)
	if err != nil {
		return "", err
	}
	pr, err := c.cl.Primary(ctx)
	if err != nil {
		return "", err
	}
	if err := fn(c, pr.Name); err != nil {
		return "", err
	}
	h.measure(string(kind), c, pr.Name, time.Now())
	return pr.Name, nil
}

// KillStorePrimary implements failpoint.StoreTarget. In
// UnsafeAsyncReplication the primary's standbys are lost first: its
// replication link is cut while it keeps committing alone.
func (p *Process) KillStorePrimary(ctx context.Context, region string) (string, error) {
	return p.hit(ctx, failpoint.KillStorePrimary, region, func(c *haCluster, member string) error {
		if c.async {
			if err := p.toxics.Cut(ctx, member, linkPGIn); err != nil {
				return err
			}
			if err := clock.Sleep(ctx, clock.Real(), storeUnsafeLag); err != nil {
				return err
			}
		}
		return c.cl.Kill(member)
	})
}

// PauseStorePrimary implements failpoint.StoreTarget.
func (p *Process) PauseStorePrimary(ctx context.Context, region string) (string, error) {
	return p.hit(ctx, failpoint.PauseStorePrimary, region, func(c *haCluster, member string) error {
		return c.cl.Pause(member)
	})
}

// CutStorePrimary implements failpoint.StoreTarget: the member's inbound
// replication link and its links to every etcd member are blackholed.
// Clients still reach it: a primary that lost the DCS must demote itself
// (and, in strict mode, it cannot commit without its standby anyway).
func (p *Process) CutStorePrimary(ctx context.Context, region string) (string, error) {
	return p.hit(ctx, failpoint.CutStorePrimary, region, func(c *haCluster, member string) error {
		return errors.Join(p.toxics.Cut(ctx, member, linkPGIn), p.toxics.Cut(ctx, member, linkDCS))
	})
}

// HealStoreMember implements failpoint.StoreTarget: once a successor runs
// as primary in the cluster homed in region, member is brought back as
// the fault left it (its links restored, resumed, or restarted) and the
// heal waits until it streams from the successor again (an old primary
// demotes itself and rejoins through pg_rewind) and the cluster is
// healthy: with strict synchronous replication only the synchronous
// standby may be promoted, so the next fault must find one. The primary
// is not switched back: Patroni switches a strict cluster over only to
// its synchronous standby.
func (p *Process) HealStoreMember(ctx context.Context, region, member string) error {
	ctx, cancel := healing(ctx)
	defer cancel()
	h, err := p.haStore()
	if err != nil {
		return err
	}
	c, err := h.cluster(region)
	if err != nil {
		return err
	}
	wctx, wcancel := context.WithTimeout(ctx, storeFailoverWait)
	_, werr := c.cl.WaitNewPrimary(wctx, member)
	wcancel()
	if err := errors.Join(p.toxics.Restore(ctx, member, linkPGIn), p.toxics.Restore(ctx, member, linkDCS)); err != nil {
		return err
	}
	return errors.Join(werr, h.bringBack(ctx, c, member))
}

// bringBack resumes member if its process runs (a no-op for a member
// that was never stopped), else restarts it, and waits until it streams
// again and the cluster is healthy.
func (h *haStore) bringBack(ctx context.Context, c *haCluster, member string) error {
	ctx, cancel := context.WithTimeout(ctx, storeFailoverWait)
	defer cancel()
	if err := c.cl.Resume(member); err != nil {
		if err := c.cl.Restart(ctx, member); err != nil {
			return err
		}
	}
	if err := h.rejoined(ctx, c, member); err != nil {
		return err
	}
	return c.cl.WaitHealthy(ctx)
}

// rejoined waits until member streams from the primary again, and records
// the timelines of the latest failover of member.
func (h *haStore) rejoined(ctx context.Context, c *haCluster, member string) error {
	ctx, cancel := context.WithTimeout(ctx, storeFailoverWait)
	defer cancel()
	for {
		ms, err := c.cl.Status(ctx)
		if err == nil {
			var mine, leader *patronilocal.MemberStatus
			for i := range ms {
				switch {
				case ms[i].Name == member:
					mine = &ms[i]
				case ms[i].Role == patronilocal.RoleLeader:
					leader = &ms[i]
				}
			}
			if mine != nil && leader != nil && mine.Role != patronilocal.RoleLeader && mine.State == patronilocal.StateStreaming {
				h.mu.Lock()
				for i := len(h.failovers) - 1; i >= 0; i-- {
					if f := h.failovers[i]; f.Old == member {
						f.OldTimeline, f.NewTimeline, f.Rejoined = mine.Timeline, leader.Timeline, true
						break
					}
				}
				h.mu.Unlock()
				return nil
			}
		}
		if err := clock.Sleep(ctx, clock.Real(), storePoll); err != nil {
			return fmt.Errorf("cluster: store member %s did not rejoin: %w", member, err)
		}
	}
}

// measure records a failover of c from old's death at death: in the
// background, when a successor runs as primary and when the first write
// committed on it.
func (h *haStore) measure(kind string, c *haCluster, old string, death time.Time) {
	f := &StoreFailover{Fault: kind, Cluster: c.home, Old: old, Death: death}
	h.mu.Lock()
	h.failovers = append(h.failovers, f)
	h.mu.Unlock()
	h.done.Add(1)
	go func() {
		defer h.done.Done()
		ctx, cancel := context.WithTimeout(context.Background(), storeFailoverWait)
		defer cancel()
		pr, err := c.cl.WaitNewPrimary(ctx, old)
		if err != nil {
			return
		}
		promoted := time.Now()
		first, _ := c.firstCommit(ctx, pr.Name, death)
		h.mu.Lock()
		f.New, f.Promoted, f.FirstCommit = pr.Name, promoted, first
		h.mu.Unlock()
	}()
}

// firstCommit polls member (the new primary) for the first coordinator
// record written after death: the first write committed on it. A
// record's updated_at is its last write's transaction start, which on
// the new primary comes after its promotion. Each poll opens its own
// connection: the new primary may drop connections (a restart to take
// its synchronous standby), and one broken connection must not end the
// measurement.
func (c *haCluster) firstCommit(ctx context.Context, member string, death time.Time) (time.Time, error) {
	dsn, err := c.cl.MemberDSN(member)
	if err != nil {
		return time.Time{}, err
	}
	poll := func() (*time.Time, error) {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		conn, err := pgx.Connect(pctx, dsn)
		if err != nil {
			return nil, err
		}
		defer conn.Close(context.WithoutCancel(ctx))
		var at *time.Time
		err = conn.QueryRow(pctx, `SELECT min(updated_at) FROM idempotency_records WHERE updated_at > $1`, death).Scan(&at)
		return at, err
	}
	for {
		if at, err := poll(); err == nil && at != nil {
			return *at, nil
		}
		if err := clock.Sleep(ctx, clock.Real(), storePoll); err != nil {
			return time.Time{}, err
		}
	}
}

// StoreFailovers implements StoreFailovers: it waits for the measurements
// still running (each bounded by storeFailoverWait).
func (p *Process) StoreFailovers() []StoreFailover {
	if p.ha == nil {
		return nil
	}
	p.ha.done.Wait()
	p.ha.mu.Lock()
	defer p.ha.mu.Unlock()
	out := make([]StoreFailover, len(p.ha.failovers))
	for i, f := range p.ha.failovers {
		out[i] = *f
	}
	return out
}

// LoseRegion implements failpoint.RegionLossTarget: the region's idemd
// (with calls in flight, as Kill), its store members (one of each
// cluster: the primary of the cluster homed there, a standby of the
// others) and its etcd member die together.
func (p *Process) LoseRegion(ctx context.Context, region string) error {
	h, err := p.haStore()
	if err != nil {
		return err
	}
	type lost struct {
		c          *haCluster
		member     string
		wasPrimary bool
	}
	var hit []lost
	for _, c := range h.clusters {
		member, err := c.memberIn(region)
		if err != nil {
			return err
		}
		l := lost{c: c, member: member}
		if pr, err := c.cl.Primary(ctx); err == nil && pr.Name == member {
			l.wasPrimary = true
		}
		hit = append(hit, l)
	}
	if err := p.Kill(ctx, region); err != nil {
		return err
	}
	// The region is out from here (Kill marked it: failpoint.TookEffect);
	// its etcd and store members die in the seconds after.
	// The other regions write to the primary until its member dies: its
	// death is after the kill, not before (a write they committed in
	// between is not the successor's first).
	errs := []error{p.members.KillMember(ctx, region)}
	for _, l := range hit {
		errs = append(errs, l.c.cl.Kill(l.member))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	death := time.Now()
	for _, l := range hit {
		if l.wasPrimary {
			h.measure(string(failpoint.RegionLossFull), l.c, l.member, death)
		}
	}
	return nil
}

// RestoreRegion implements failpoint.RegionLossTarget: etcd member first,
// then, once each cluster whose primary was there promoted a successor,
// the region's store members (until they stream again), then the idemd
// and its failback.
func (p *Process) RestoreRegion(ctx context.Context, region string) error {
	hctx, cancel := healing(ctx)
	defer cancel()
	h, err := p.haStore()
	if err != nil {
		return err
	}
	if err := p.members.RestartMember(hctx, region); err != nil {
		return err
	}
	errs := make([]error, len(h.clusters))
	var wg sync.WaitGroup
	for i, c := range h.clusters {
		member, err := c.memberIn(region)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			wctx, wcancel := context.WithTimeout(hctx, storeFailoverWait)
			_, werr := c.cl.WaitNewPrimary(wctx, member)
			wcancel()
			errs[i] = errors.Join(werr, h.bringBack(hctx, c, member))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return p.Restart(ctx, region)
}

// StorePart is one database of a store split over several: a Patroni
// cluster named by its home region, its direct URL, and the shards whose
// fences it holds (those homed in its region).
type StorePart struct {
	Name, DSN string
	Fences    func(shard int) bool
}

// StoreParts is implemented by a cluster whose store is split over
// several databases: the checker reads each, and the demo ledger from
// the database ledger names. A cluster on one database returns no parts.
type StoreParts interface {
	StoreParts() (parts []StorePart, ledger string)
}

var _ StoreParts = (*Process)(nil)

// StoreParts implements StoreParts: on the replicated store, one part per
// home region's Patroni cluster, and the demo services' own PostgreSQL.
func (p *Process) StoreParts() ([]StorePart, string) {
	if p.ha == nil {
		return nil, ""
	}
	var parts []StorePart
	for _, c := range p.ha.clusters {
		home := c.home
		parts = append(parts, StorePart{Name: home, DSN: c.cl.DSN(),
			Fences: func(shard int) bool { return p.Home(shard) == home }})
	}
	return parts, p.pg.DSN("postgres")
}
