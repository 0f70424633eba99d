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
	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/internal/etcdlocal"
	"github.com/idemcoord/idemcoord/internal/patronilocal"
	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/sqlstore"
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
	// Fault is the fault's kind; Old the member it hit (the primary),
	// New the member promoted.
	Fault, Old, New string
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

// haStore is the process cluster's replicated store: one Patroni cluster
// whose members stand for the three regions, its primary in the first.
type haStore struct {
	cl    *patronilocal.Cluster
	async bool

	mu        sync.Mutex
	failovers []*StoreFailover
	done      sync.WaitGroup // failover measurements in progress
}

var _ StoreFailovers = (*Process)(nil)

// startHAStores starts etcd, the Patroni cluster on it (each member's DCS
// and inbound replication links through proxies), the coordinator's
// schema, the demo services and the drill's own connections.
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
	cfg := patronilocal.DefaultConfig()
	cfg.Scope, cfg.Namespace = "idemdrill", "/idemdrill-patroni/"
	cfg.EtcdEndpoints = p.etcd.Endpoints()
	cfg.Async, cfg.Strict = async, !async
	cfg.Advertise = func(member, listen string) (string, error) {
		addr, err := p.toxics.Add(member, linkPGIn, listen)
		if err != nil {
			return "", err
		}
		return addr, p.toxics.Base(proxyName(member, linkPGIn), storeRTT)
	}
	for _, r := range devcluster.Regions {
		m := patronilocal.MemberSpec{Name: r, Region: r}
		for i, ep := range p.etcd.Endpoints() {
			addr, err := p.toxics.AddTo(r, linkDCS, devcluster.Regions[i], strings.TrimPrefix(ep, "http://"))
			if err != nil {
				return err
			}
			m.EtcdEndpoints = append(m.EtcdEndpoints, "http://"+addr)
		}
		cfg.Members = append(cfg.Members, m)
	}
	cl, err := patronilocal.Start(ctx, cfg)
	if err != nil {
		return err
	}
	p.ha = &haStore{cl: cl, async: async}
	if err := p.ha.failback(ctx, devcluster.Regions[0]); err != nil {
		return err
	}
	dsn := cl.DSN()
	if p.store, err = sqlstore.Open(ctx, sqlstore.Config{DSN: dsn, MaxConns: 8, Migrate: true,
		Logger: slog.New(slog.DiscardHandler)}); err != nil {
		return err
	}
	p.owners = ownership.NewDirectory(p.cli, p.store, ownership.WithLogger(slog.New(slog.DiscardHandler)))
	p.demo, err = startDemo(ctx, dsn, devcluster.Regions, p.demoLogger())
	return err
}

// regionDSN is region's multi-host URL over every member through its own
// "sql" proxies (its own region's member first; the others' with the
// inter-region latency), connecting only to the one accepting writes.
func (h *haStore) regionDSN(t *Toxics, region string) (string, error) {
	members := h.cl.Members()
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
		listen, err := h.cl.ListenAddr(m.Name)
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

// memberIn returns the store member standing for region.
func (h *haStore) memberIn(region string) (string, error) {
	for _, m := range h.cl.Members() {
		if m.Region == region {
			return m.Name, nil
		}
	}
	return "", fmt.Errorf("cluster: no store member in region %q", region)
}

// failback hands the primary to region's member by a planned switchover
// (at start, so the primary begins in the first region). Patroni switches
// a strict cluster over only to its synchronous standby, so when the
// member is not it, both standbys are made synchronous for the switchover
// (synchronous_node_count 2) and the count is set back after it.
func (h *haStore) failback(ctx context.Context, region string) error {
	home, err := h.memberIn(region)
	if err != nil {
		return err
	}
	if err := h.cl.WaitHealthy(ctx); err != nil {
		return err
	}
	if pr, err := h.cl.Primary(ctx); err != nil || pr.Name == home {
		return err
	}
	if !h.async {
		if err := h.patchConfig(ctx, `{"synchronous_node_count":2}`); err != nil {
			return err
		}
		defer h.patchConfig(context.WithoutCancel(ctx), `{"synchronous_node_count":1}`)
		if err := h.waitRole(ctx, home, patronilocal.RoleSyncStandby); err != nil {
			return err
		}
	}
	return h.cl.Switchover(ctx, home)
}

// patchConfig changes the cluster's dynamic configuration in the DCS
// (Patroni's REST PATCH /config, as `patronictl edit-config`).
func (h *haStore) patchConfig(ctx context.Context, body string) error {
	var errs []error
	for _, base := range h.cl.RESTURLs() {
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
func (h *haStore) waitRole(ctx context.Context, member, role string) error {
	ctx, cancel := context.WithTimeout(ctx, storeFailoverWait)
	defer cancel()
	for {
		if ms, err := h.cl.Status(ctx); err == nil {
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

// hit finds the primary of the store cluster homed in region (the one
// cluster stands for every region's), applies fn to it and starts
// measuring the failover that follows.
func (p *Process) hit(ctx context.Context, kind failpoint.Kind, fn func(h *haStore, member string) error) (string, error) {
	h, err := p.haStore()
	if err != nil {
		return "", err
	}
	pr, err := h.cl.Primary(ctx)
	if err != nil {
		return "", err
	}
	if err := fn(h, pr.Name); err != nil {
		return "", err
	}
	h.measure(string(kind), pr.Name, time.Now())
	return pr.Name, nil
}

// KillStorePrimary implements failpoint.StoreTarget. In
// UnsafeAsyncReplication the primary's standbys are lost first: its
// replication link is cut while it keeps committing alone.
func (p *Process) KillStorePrimary(ctx context.Context, region string) (string, error) {
	return p.hit(ctx, failpoint.KillStorePrimary, func(h *haStore, member string) error {
		if h.async {
			if err := p.toxics.Cut(ctx, member, linkPGIn); err != nil {
				return err
			}
			if err := clock.Sleep(ctx, clock.Real(), storeUnsafeLag); err != nil {
				return err
			}
		}
		return h.cl.Kill(member)
	})
}

// PauseStorePrimary implements failpoint.StoreTarget.
func (p *Process) PauseStorePrimary(ctx context.Context, region string) (string, error) {
	return p.hit(ctx, failpoint.PauseStorePrimary, func(h *haStore, member string) error { return h.cl.Pause(member) })
}

// CutStorePrimary implements failpoint.StoreTarget: the member's inbound
// replication link and its links to every etcd member are blackholed.
// Clients still reach it: a primary that lost the DCS must demote itself
// (and, in strict mode, it cannot commit without its standby anyway).
func (p *Process) CutStorePrimary(ctx context.Context, region string) (string, error) {
	return p.hit(ctx, failpoint.CutStorePrimary, func(h *haStore, member string) error {
		return errors.Join(p.toxics.Cut(ctx, member, linkPGIn), p.toxics.Cut(ctx, member, linkDCS))
	})
}

// HealStoreMember implements failpoint.StoreTarget: once a successor runs
// as primary, member is brought back as the fault left it (its links
// restored, resumed, or restarted) and the heal waits until it streams
// from the successor again (an old primary demotes itself and rejoins
// through pg_rewind) and the cluster is healthy: with strict synchronous
// replication only the synchronous standby may be promoted, so the next
// fault must find one. The primary is not switched back: Patroni switches
// a strict cluster over only to its synchronous standby.
func (p *Process) HealStoreMember(ctx context.Context, region, member string) error {
	ctx, cancel := healing(ctx)
	defer cancel()
	h, err := p.haStore()
	if err != nil {
		return err
	}
	wctx, wcancel := context.WithTimeout(ctx, storeFailoverWait)
	_, werr := h.cl.WaitNewPrimary(wctx, member)
	wcancel()
	if err := errors.Join(p.toxics.Restore(ctx, member, linkPGIn), p.toxics.Restore(ctx, member, linkDCS)); err != nil {
		return err
	}
	return errors.Join(werr, h.bringBack(ctx, member))
}

// bringBack resumes member if its process runs (a no-op for a member
// that was never stopped), else restarts it, and waits until it streams
// again and the cluster is healthy.
func (h *haStore) bringBack(ctx context.Context, member string) error {
	ctx, cancel := context.WithTimeout(ctx, storeFailoverWait)
	defer cancel()
	if err := h.cl.Resume(member); err != nil {
		if err := h.cl.Restart(ctx, member); err != nil {
			return err
		}
	}
	if err := h.rejoined(ctx, member); err != nil {
		return err
	}
	return h.cl.WaitHealthy(ctx)
}

// rejoined waits until member streams from the primary again, and records
// the timelines of the latest failover of member.
func (h *haStore) rejoined(ctx context.Context, member string) error {
	ctx, cancel := context.WithTimeout(ctx, storeFailoverWait)
	defer cancel()
	for {
		ms, err := h.cl.Status(ctx)
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

// measure records a failover from old's death at death: in the
// background, when a successor runs as primary and when the first write
// committed on it.
func (h *haStore) measure(kind, old string, death time.Time) {
	f := &StoreFailover{Fault: kind, Old: old, Death: death}
	h.mu.Lock()
	h.failovers = append(h.failovers, f)
	h.mu.Unlock()
	h.done.Add(1)
	go func() {
		defer h.done.Done()
		ctx, cancel := context.WithTimeout(context.Background(), storeFailoverWait)
		defer cancel()
		pr, err := h.cl.WaitNewPrimary(ctx, old)
		if err != nil {
			return
		}
		promoted := time.Now()
		first, _ := h.firstCommit(ctx, pr.Name, death)
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
func (h *haStore) firstCommit(ctx context.Context, member string, death time.Time) (time.Time, error) {
	dsn, err := h.cl.MemberDSN(member)
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
// (with calls in flight, as Kill), its store member and its etcd member
// die together.
func (p *Process) LoseRegion(ctx context.Context, region string) error {
	h, err := p.haStore()
	if err != nil {
		return err
	}
	member, err := h.memberIn(region)
	if err != nil {
		return err
	}
	wasPrimary := false
	if pr, err := h.cl.Primary(ctx); err == nil && pr.Name == member {
		wasPrimary = true
	}
	if err := p.Kill(ctx, region); err != nil {
		return err
	}
	// The other regions write to the primary until its member dies: its
	// death is after the kill, not before (a write they committed in
	// between is not the successor's first).
	if err := errors.Join(h.cl.Kill(member), p.members.KillMember(ctx, region)); err != nil {
		return err
	}
	death := time.Now()
	if wasPrimary {
		h.measure(string(failpoint.RegionLossFull), member, death)
	}
	return nil
}

// RestoreRegion implements failpoint.RegionLossTarget: etcd member first,
// then, once the store promoted a successor, the store member (until it
// streams again), then the idemd and its failback.
func (p *Process) RestoreRegion(ctx context.Context, region string) error {
	hctx, cancel := healing(ctx)
	defer cancel()
	h, err := p.haStore()
	if err != nil {
		return err
	}
	member, err := h.memberIn(region)
	if err != nil {
		return err
	}
	if err := p.members.RestartMember(hctx, region); err != nil {
		return err
	}
	wctx, wcancel := context.WithTimeout(hctx, storeFailoverWait)
	_, werr := h.cl.WaitNewPrimary(wctx, member)
	wcancel()
	if err := h.bringBack(hctx, member); err != nil {
		return errors.Join(werr, err)
	}
	return errors.Join(werr, p.Restart(ctx, region))
}
