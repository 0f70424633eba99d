package cluster

import (
	"context"
	"time"

	"github.com/idemcoord/idemcoord/chaos/failpoint"
	"github.com/idemcoord/idemcoord/chaos/validate"
	"github.com/idemcoord/idemcoord/store/backend"
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
	// Store is the SQL store the regions use: "" (StoreSingle) for one
	// throwaway PostgreSQL, StoreHA for the replicated store (Patroni;
	// the process cluster only).
	Store string
}

// Values of Options.Store.
const (
	// StoreSingle is one throwaway PostgreSQL shared by every region.
	StoreSingle = "single"
	// StoreHA is PostgreSQL replicated across the regions under Patroni.
	StoreHA = "ha"
)

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

// The fault capabilities a cluster kind implements as far as it can;
// each fault kind's row in chaos/failpoint's registry names the one it
// needs (see failpoint's targets.go for their methods).
type (
	// Processes kills, pauses and restarts a region's idemd.
	Processes = failpoint.ProcessTarget
	// PeerLinks cuts one region's link to one other region alone.
	PeerLinks = failpoint.PeerLinkTarget
	// Links acts on one of a region's links through its toxiproxy.
	Links = failpoint.LinkTarget
	// Etcd kills and restarts etcd members.
	Etcd = failpoint.EtcdTarget
	// CrashPoints arms the coordinator's drill-only crash points.
	CrashPoints = failpoint.CrashPointTarget
	// Clocks skews a region's injected clock.
	Clocks = failpoint.ClockTarget
)

var _ PeerLinks = (*Process)(nil)

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

// ProbeStore is implemented by a cluster whose store is more than the one
// PostgreSQL behind DSN (the replicated store: one Patroni cluster per
// home region). The drill's probes open the backend it returns, as the
// gateways see the store, so a probe's fence read and claim land in the
// shard's own cluster; ok is false when DSN is the whole store.
type ProbeStore interface {
	ProbeStore() (opts backend.Options, ok bool)
}

// Upstream is implemented by a cluster that knows its endpoint's
// upstream_timeout, which an SDK client is told (client.Config
// UpstreamTimeout) to derive its response-header timeout from, and the
// global entry its server timeout.
type Upstream interface {
	UpstreamTimeout() time.Duration
}

// Homes is implemented by a cluster that knows each shard's home region
// (its owner at epoch 1), so the checker can test that a region served a
// first run only while it owned the shard (I6).
type Homes interface {
	Home(shard int) string
}
