package failpoint

import (
	"context"
	"time"
)

// The capabilities a cluster offers faults, each a small interface a
// cluster kind implements as far as it can (chaos/cluster: the in-process
// Regional and the process-level Process). A fault's row (kinds.go) names
// the one its Apply needs; a cluster without it gets ErrUnsupported.

// ProcessTarget kills, pauses and restarts a region's idemd.
type ProcessTarget interface {
	// Kill sends SIGKILL to region's idemd; Restart starts it again on the
	// same address.
	Kill(ctx context.Context, region string) error
	Restart(ctx context.Context, region string) error
	// Pause sends SIGSTOP; Resume sends SIGCONT.
	Pause(ctx context.Context, region string) error
	Resume(ctx context.Context, region string) error
}

// PeerLinkTarget cuts one region's link to one other region alone (cut_peer).
type PeerLinkTarget interface {
	// CutTo blackholes region's link of that kind to target alone;
	// RestoreTo undoes it.
	CutTo(ctx context.Context, region string, link Link, target string) error
	RestoreTo(ctx context.Context, region string, link Link, target string) error
}

// LinkTarget acts on one of a region's links through its toxiproxy.
type LinkTarget interface {
	// Cut blackholes the link (toxiproxy timeout 0); Restore removes every
	// toxic from it.
	Cut(ctx context.Context, region string, link Link) error
	Restore(ctx context.Context, region string, link Link) error
	// Slow adds latency with jitter; Reset resets its connections
	// (reset_peer) until Restore.
	Slow(ctx context.Context, region string, link Link, latency, jitter time.Duration) error
	Reset(ctx context.Context, region string, link Link) error
}

// EtcdTarget kills and restarts etcd members.
type EtcdTarget interface {
	// Leader names the member that leads now.
	Leader(ctx context.Context) (string, error)
	// KillMember hard-stops a member; RestartMember brings it back.
	KillMember(ctx context.Context, member string) error
	RestartMember(ctx context.Context, member string) error
}

// CrashPointTarget arms the coordinator's drill-only crash points.
type CrashPointTarget interface {
	// Arm makes region's idemd die when it reaches point; Disarm undoes it
	// (and restarts the region if it died).
	Arm(ctx context.Context, region, point string) error
	Disarm(ctx context.Context, region, point string) error
}

// ClockTarget skews a region's injected clock.
type ClockTarget interface {
	// Skew moves region's clock by d (negative is back); Skew by 0 undoes it.
	Skew(ctx context.Context, region string, d time.Duration) error
}

// StoreTarget acts on the replicated store (one Patroni cluster per home
// region): region names the cluster homed there. Each injection returns
// the member it hit; the heal waits until the cluster promoted a successor
// before it brings that member back (it rejoins through pg_rewind), then
// hands the primary back to the home region's member (a planned
// switchover, the failback).
type StoreTarget interface {
	// KillStorePrimary sends SIGKILL to the primary's Patroni and every
	// PostgreSQL process of it.
	KillStorePrimary(ctx context.Context, region string) (member string, err error)
	// PauseStorePrimary sends SIGSTOP to them: a zombie primary once its
	// leader key's ttl ran out.
	PauseStorePrimary(ctx context.Context, region string) (member string, err error)
	// CutStorePrimary cuts the primary from etcd and from its replicas
	// (its inbound replication link and its DCS links).
	CutStorePrimary(ctx context.Context, region string) (member string, err error)
	// HealStoreMember undoes what the injection did to member (restart,
	// SIGCONT, restore) once a successor was promoted and waits until it
	// streams again.
	HealStoreMember(ctx context.Context, region, member string) error
}

// RegionLossTarget takes a whole region out: its idemd, its store members
// and its etcd member together.
type RegionLossTarget interface {
	// LoseRegion kills them all by SIGKILL (etcd: a hard stop).
	LoseRegion(ctx context.Context, region string) error
	// RestoreRegion restarts the etcd member, the store members (until
	// they stream again) and the idemd (failed back).
	RestoreRegion(ctx context.Context, region string) error
}
