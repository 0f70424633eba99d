package failpoint

import (
	"fmt"
	"time"

	"github.com/idemcoord/idemcoord/internal/drillpoint"
)

// Link names a region's network link, each through its own toxiproxy.
type Link string

// Links.
const (
	LinkEtcd     Link = "etcd"
	LinkSQL      Link = "sql"
	LinkPeer     Link = "peer"
	LinkUpstream Link = "upstream"
)

// Links lists every link.
var Links = []Link{LinkEtcd, LinkSQL, LinkPeer, LinkUpstream}

// Crash points the drills can arm (the coordinator compiles them in only
// for drills). They are the coordinator's own (package drillpoint), by
// name.
const (
	PointAfterClaim    = string(drillpoint.AfterClaim)
	PointAfterUpstream = string(drillpoint.AfterUpstream)
	PointBeforeFinish  = string(drillpoint.BeforeFinish)
	PointDuringCommit  = string(drillpoint.DuringCommit)
)

// CrashPoints lists the known crash points: drillpoint.Points, by name.
var CrashPoints = crashPoints()

func crashPoints() []string {
	var names []string
	for _, p := range drillpoint.Points() {
		names = append(names, string(p))
	}
	return names
}

// Fault is one fault of a schedule, as data.
type Fault struct {
	// Kind says what is done.
	Kind Kind `json:"kind"`
	// Region is the target region; empty for a cluster-wide kind
	// (Def.ClusterWide: KillEtcdLeader).
	Region string `json:"region,omitempty"`
	// At is when the fault starts, from the start of the run.
	At time.Duration `json:"at"`
	// For is how long it lasts before it is healed.
	For time.Duration `json:"for"`
	// Link is the link Latency and ResetPeer act on.
	Link Link `json:"link,omitempty"`
	// Latency and Jitter are Latency's added delay and its spread.
	Latency time.Duration `json:"latency,omitempty"`
	Jitter  time.Duration `json:"jitter,omitempty"`
	// Point is CrashPoint's crash point.
	Point string `json:"point,omitempty"`
	// Skew is ClockSkew's offset (may be negative).
	Skew time.Duration `json:"skew,omitempty"`
	// Peer is the other region CutPeer cuts Region from.
	Peer string `json:"peer,omitempty"`
}

// End returns when the fault is healed.
func (f Fault) End() time.Duration { return f.At + f.For }

// String describes the fault for people and for the history.
func (f Fault) String() string {
	s := string(f.Kind)
	if f.Region != "" {
		s += " " + f.Region
	}
	if d, ok := Lookup(f.Kind); ok && d.Describe != nil {
		s += d.Describe(f)
	}
	return s + fmt.Sprintf(" for %v", f.For)
}
