package cluster

import (
	"context"
	"time"

	"github.com/idemcoord/idemcoord/chaos/failpoint"
	"github.com/idemcoord/idemcoord/chaos/validate"
)

// Region is one region's public face.
type Region struct {
	// Name is the region's name ("us-east").
	Name string
	// URL is its gateway's base URL.
	URL string
}

// Options says how a drill wants its cluster started.
type Options struct {
	// Policy is the endpoint's failover policy, "reject" or "transfer".
	Policy string
	// Lease is the coordinator's lease.
	Lease time.Duration
	// Unsafe starts the coordinator in its drills-only unsafe mode (the
	// checker must then report violations).
	Unsafe string
}

// Cluster is the topology every drill needs. Stop ends everything the
// cluster started.
type Cluster interface {
	// Regions lists the regions, in a fixed order.
	Regions() []Region
	// Token returns a bearer token for subject, in the cluster's tenant.
	Token(ctx context.Context, subject string) (string, error)
	// Tenant is the tenant tokens carry (actor scope = tenant/subject).
	Tenant() string
	// DSN is the global SQL store's URL, for the checker's and probes'
	// direct reads.
	DSN() string
	// Stop stops the cluster and removes its data.
	Stop(ctx context.Context) error
}

// Starter starts a cluster for a drill.
type Starter func(ctx context.Context, opts Options) (Cluster, error)

// Processes kills, pauses and restarts a region's idemd.
type Processes interface {
	// Kill sends SIGKILL to region's idemd; Restart starts it again on the
	// same address.
	Kill(ctx context.Context, region string) error
	Restart(ctx context.Context, region string) error
	// Pause sends SIGSTOP; Resume sends SIGCONT.
	Pause(ctx context.Context, region string) error
	Resume(ctx context.Context, region string) error
}

// PeerLinks cuts one region's link to one other region alone (cut_peer).
type PeerLinks interface {
	// CutTo blackholes region's link of that kind to target alone;
	// RestoreTo undoes it.
	CutTo(ctx context.Context, region string, link failpoint.Link, target string) error
	RestoreTo(ctx context.Context, region string, link failpoint.Link, target string) error
}

var _ PeerLinks = (*Process)(nil)

// Links acts on one of a region's links through its toxiproxy.
type Links interface {
	// Cut blackholes the link (toxiproxy timeout 0); Restore removes every
	// toxic from it.
	Cut(ctx context.Context, region string, link failpoint.Link) error
	Restore(ctx context.Context, region string, link failpoint.Link) error
	// Slow adds latency with jitter; Reset resets its connections
	// (reset_peer) until Restore.
	Slow(ctx context.Context, region string, link failpoint.Link, latency, jitter time.Duration) error
	Reset(ctx context.Context, region string, link failpoint.Link) error
}

// Etcd kills and restarts etcd members.
type Etcd interface {
	// Leader names the member that leads now.
	Leader(ctx context.Context) (string, error)
	// KillMember hard-stops a member; RestartMember brings it back.
	KillMember(ctx context.Context, member string) error
	RestartMember(ctx context.Context, member string) error
}

// CrashPoints arms the coordinator's drill-only crash points.
type CrashPoints interface {
	// Arm makes region's idemd die when it reaches point; Disarm undoes it
	// (and restarts the region if it died).
	Arm(ctx context.Context, region, point string) error
	Disarm(ctx context.Context, region, point string) error
}

// Clocks skews a region's injected clock.
type Clocks interface {
	// Skew moves region's clock by d (negative is back); Skew by 0 undoes it.
	Skew(ctx context.Context, region string, d time.Duration) error
}

// Directory reads the etcd ownership directory as plain data, for the
// checker's etcd-SQL agreement check (I4).
type Directory interface {
	Directory(ctx context.Context) (map[int]validate.DirectoryEntry, error)
}

// DirectoryHistory is implemented by a cluster that can read every
// revision etcd still holds of the ownership directory's shard keys, for
// the checker's I8 (ReadDirectoryHistory does it from an etcd client).
type DirectoryHistory interface {
	DirectoryHistory(ctx context.Context) (map[int]validate.ShardHistory, error)
}

// Mover is implemented by a cluster whose drill may move a shard itself:
// the planned, drained transfer `idemctl move` runs, for the drill's
// move-under-load probe.
type Mover interface {
	// MoveShard transfers shard to region to (ACTIVE there), letting the
	// old owner finish what it already started for at most drain.
	MoveShard(ctx context.Context, shard int, to string, drain time.Duration) error
}

// Shards is implemented by a cluster whose shard count is not
// shard.DefaultCount; the traffic hashes actors with it.
type Shards interface {
	Shards() int
}

// Homes is implemented by a cluster that knows each shard's home region
// (its owner at epoch 1), so the checker can test that a region served a
// first run only while it owned the shard (I6).
type Homes interface {
	Home(shard int) string
}
