package failpoint

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Kind is a kind of fault: a row of the registry below.
type Kind string

// Fault kinds; each one's row in registry says what it does.
const (
	KillRegion     Kind = "kill_region"
	PauseRegion    Kind = "pause_region"
	CutEtcd        Kind = "cut_etcd"
	CutSQL         Kind = "cut_sql"
	CutBoth        Kind = "cut_both"
	Latency        Kind = "latency"
	ResetPeer      Kind = "reset_peer"
	KillEtcdLeader Kind = "kill_etcd_leader"
	CrashPoint     Kind = "crash_point"
	ClockSkew      Kind = "clock_skew"
	CutPeer        Kind = "cut_peer"
	ShortPause     Kind = "short_pause"
	// The replicated store's faults (a cluster started with the store
	// "ha": one Patroni cluster per home region).
	KillStorePrimary  Kind = "kill_store_primary"
	PauseStorePrimary Kind = "pause_store_primary"
	CutStorePrimary   Kind = "cut_store_primary"
	RegionLossFull    Kind = "region_loss_full"
)

// ShortPauseMax is the longest a ShortPause lasts (Plan cuts a longer
// draw to it): under the liveness budget at the default timings
// (ownership.DefaultLivenessTTL 2 s, less a keepalive interval of
// TTL/6), with room for scheduling delays.
const ShortPauseMax = 1500 * time.Millisecond

// registry is the fault registry: one row per kind. Its order is part of
// every schedule drawn from Kinds; add new kinds at the end.
var registry = []Def{
	{Kind: KillRegion, Class: ClassRegionLoss,
		Doc: "SIGKILL of a region's idemd with calls in flight (its upstream answers are held for a second first); " +
			"heals by restarting it and failing its home shards back",
		Apply: on(inRegion(ProcessTarget.Kill), inRegion(ProcessTarget.Restart))},
	{Kind: PauseRegion, Class: ClassRegionLoss, AtLeast: pauseFor,
		Doc: "SIGSTOP of a region's idemd with calls in flight, for at least its lease and a quarter: " +
			"it wakes a zombie; heals by SIGCONT and a failback",
		Apply: on(inRegion(ProcessTarget.Pause), inRegion(ProcessTarget.Resume))},
	{Kind: CutEtcd, Class: ClassRegionLoss,
		Doc:   "cuts a region's links to every etcd member; heals by restoring them and a failback",
		Apply: on(cut(LinkEtcd), restore(LinkEtcd))},
	{Kind: CutSQL, Class: ClassRegionLoss,
		Doc:   "cuts a region's link to the SQL store (it is not ready while cut); heals by restoring it and a failback",
		Apply: on(cut(LinkSQL), restore(LinkSQL))},
	{Kind: CutBoth, Class: ClassRegionLoss,
		Doc:   "cuts a region from etcd and from SQL; heals by restoring both and a failback",
		Apply: on(cut(LinkEtcd, LinkSQL), restore(LinkEtcd, LinkSQL))},
	{Kind: Latency, Class: ClassNoFailover,
		Doc: "adds latency with jitter (up to max_latency, max_jitter) to one of a region's links (links); " +
			"heals by restoring it",
		Draw: func(f *Fault, s Spec, rng *rand.Rand) {
			f.Link = s.Links[rng.IntN(len(s.Links))]
			f.Latency = time.Millisecond + between(rng, s.MaxLatency)
			f.Jitter = between(rng, s.MaxJitter)
		},
		Describe: func(f Fault) string { return fmt.Sprintf(" %s +%v±%v", f.Link, f.Latency, f.Jitter) },
		Apply:    on(slowLink, restoreLink)},
	{Kind: ResetPeer, Class: ClassOther,
		Doc: "resets the connections of one of a region's links (links) as answers come back, " +
			"on the SQL link answers to COMMIT; heals by restoring it",
		Draw:     func(f *Fault, s Spec, rng *rand.Rand) { f.Link = s.Links[rng.IntN(len(s.Links))] },
		Describe: func(f Fault) string { return " " + string(f.Link) },
		Apply:    on(resetLink, restoreLink)},
	{Kind: KillEtcdLeader, Class: ClassOther, ClusterWide: true,
		Doc: "hard-stops the etcd member that leads; heals by restarting it",
		Apply: with(func(ctx context.Context, e EtcdTarget, _ Fault) (Heal, error) {
			leader, err := e.Leader(ctx)
			if err != nil {
				return nil, err
			}
			if err := e.KillMember(ctx, leader); err != nil {
				return nil, err
			}
			return func(ctx context.Context) error { return e.RestartMember(ctx, leader) }, nil
		})},
	{Kind: CrashPoint, Class: ClassRegionLoss,
		Doc: "arms a crash point (points) in a region's idemd: it dies by SIGKILL when a request reaches it; " +
			"heals by disarming, restarting it if it died, and a failback",
		Draw:     func(f *Fault, s Spec, rng *rand.Rand) { f.Point = s.Points[rng.IntN(len(s.Points))] },
		Describe: func(f Fault) string { return " at " + f.Point },
		Apply: on(func(ctx context.Context, c CrashPointTarget, f Fault) error { return c.Arm(ctx, f.Region, f.Point) },
			func(ctx context.Context, c CrashPointTarget, f Fault) error { return c.Disarm(ctx, f.Region, f.Point) })},
	{Kind: ClockSkew, Class: ClassOther,
		Doc:      "moves a region's clock by up to max_skew either way; heals by setting the skew back to 0",
		Draw:     func(f *Fault, s Spec, rng *rand.Rand) { f.Skew = between(rng, 2*s.MaxSkew) - s.MaxSkew },
		Describe: func(f Fault) string { return fmt.Sprintf(" by %v", f.Skew) },
		Apply: on(func(ctx context.Context, c ClockTarget, f Fault) error { return c.Skew(ctx, f.Region, f.Skew) },
			func(ctx context.Context, c ClockTarget, f Fault) error { return c.Skew(ctx, f.Region, 0) })},
	{Kind: CutPeer, Class: ClassNoFailover,
		Doc: "cuts the links between a region and one other region, both ways, while both still reach etcd, SQL " +
			"and the third region; heals by restoring them",
		Check: func(s Spec, bad func(field, format string, args ...any)) {
			if len(s.Regions) < 2 {
				bad("regions", "cut_peer needs at least two regions")
			}
		},
		Draw: func(f *Fault, s Spec, rng *rand.Rand) {
			others := slices.DeleteFunc(slices.Clone(s.Regions), func(r string) bool { return r == f.Region })
			f.Peer = others[rng.IntN(len(others))]
		},
		Describe: func(f Fault) string { return " from " + f.Peer },
		Apply: on(func(ctx context.Context, p PeerLinkTarget, f Fault) error {
			if err := p.CutTo(ctx, f.Region, LinkPeer, f.Peer); err != nil {
				return err
			}
			return p.CutTo(ctx, f.Peer, LinkPeer, f.Region)
		}, func(ctx context.Context, p PeerLinkTarget, f Fault) error {
			return errors.Join(p.RestoreTo(ctx, f.Region, LinkPeer, f.Peer), p.RestoreTo(ctx, f.Peer, LinkPeer, f.Region))
		})},
	{Kind: ShortPause, Class: ClassNoFailover, AtMost: ShortPauseMax,
		Doc: "SIGSTOP of a region's idemd for at most 1.5 s, under its liveness budget (a GC pause, " +
			"a noisy neighbour); heals by SIGCONT",
		Apply: on(inRegion(ProcessTarget.Pause), inRegion(ProcessTarget.Resume))},
	{Kind: KillStorePrimary, Class: ClassOther,
		Doc: "SIGKILL of the primary (Patroni and PostgreSQL) of the store cluster homed in a region; " +
			"heals, once a standby was promoted, by restarting it and waiting until it streams again (it rejoins through pg_rewind)",
		Apply: storeFault(StoreTarget.KillStorePrimary)},
	{Kind: PauseStorePrimary, Class: ClassOther,
		Doc: "SIGSTOP of the primary of the store cluster homed in a region, past its leader ttl (a zombie primary); " +
			"heals, once a standby was promoted, by SIGCONT and waiting until it demoted itself and streams again",
		Apply: storeFault(StoreTarget.PauseStorePrimary)},
	{Kind: CutStorePrimary, Class: ClassOther,
		Doc: "cuts the primary of the store cluster homed in a region from etcd and from its replicas; " +
			"heals, once a standby was promoted, by restoring its links and waiting until it streams again",
		Apply: storeFault(StoreTarget.CutStorePrimary)},
	{Kind: RegionLossFull, Class: ClassRegionLoss,
		Doc: "kills a region's idemd, its store members and its etcd member together; heals by restarting " +
			"etcd, the members (streaming again) and the idemd, and a failback",
		Apply: on(inRegion(RegionLossTarget.LoseRegion), inRegion(RegionLossTarget.RestoreRegion))},
}

// storeFault builds the Apply of a fault on a store cluster's primary:
// the heal brings back the member the injection hit.
func storeFault(inject func(StoreTarget, context.Context, string) (string, error)) Apply {
	return with(func(ctx context.Context, t StoreTarget, f Fault) (Heal, error) {
		member, err := inject(t, ctx, f.Region)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) error { return t.HealStoreMember(ctx, f.Region, member) }, nil
	})
}

// pauseFor is how long a PauseRegion lasts at least: past the lease, so
// the region comes back a zombie.
func pauseFor(s Spec) time.Duration { return s.Lease + s.Lease/4 }

// cut and restore act on a region's given links, in order.
func cut(links ...Link) func(context.Context, LinkTarget, Fault) error {
	return eachLink(LinkTarget.Cut, links)
}

func restore(links ...Link) func(context.Context, LinkTarget, Fault) error {
	return eachLink(LinkTarget.Restore, links)
}

func eachLink(m func(LinkTarget, context.Context, string, Link) error, links []Link) func(context.Context, LinkTarget, Fault) error {
	return func(ctx context.Context, l LinkTarget, f Fault) error {
		for _, link := range links {
			if err := m(l, ctx, f.Region, link); err != nil {
				return err
			}
		}
		return nil
	}
}

// slowLink, resetLink and restoreLink act on the link a fault drew
// (Fault.Link).
func slowLink(ctx context.Context, l LinkTarget, f Fault) error {
	return l.Slow(ctx, f.Region, f.Link, f.Latency, f.Jitter)
}

func resetLink(ctx context.Context, l LinkTarget, f Fault) error {
	return l.Reset(ctx, f.Region, f.Link)
}

func restoreLink(ctx context.Context, l LinkTarget, f Fault) error {
	return l.Restore(ctx, f.Region, f.Link)
}
