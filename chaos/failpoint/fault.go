package failpoint

import (
	"fmt"
	"time"

	"github.com/idemcoord/idemcoord/internal/drillpoint"
)

// Kind is a kind of fault.
type Kind string

// Fault kinds.
const (
	// KillRegion sends SIGKILL to a region's idemd; healing restarts it.
	KillRegion Kind = "kill_region"
	// PauseRegion sends SIGSTOP to a region's idemd for longer than its
	// lease (the zombie), then SIGCONT.
	PauseRegion Kind = "pause_region"
	// CutEtcd cuts a region's links to etcd (toxiproxy timeout 0).
	CutEtcd Kind = "cut_etcd"
	// CutSQL cuts a region's link to the SQL store.
	CutSQL Kind = "cut_sql"
	// CutBoth cuts a region from etcd and from SQL.
	CutBoth Kind = "cut_both"
	// Latency adds latency and jitter to one of a region's links.
	Latency Kind = "latency"
	// ResetPeer resets the connections of one of a region's links, which
	// includes connections in the middle of a COMMIT.
	ResetPeer Kind = "reset_peer"
	// KillEtcdLeader kills the etcd member that leads; healing restarts it.
	KillEtcdLeader Kind = "kill_etcd_leader"
	// CrashPoint arms a named crash point inside a region's protocol
	// (compiled in only for drills): the region dies when it reaches it.
	CrashPoint Kind = "crash_point"
	// ClockSkew moves a region's injected clock by Skew.
	ClockSkew Kind = "clock_skew"
	// CutPeer cuts the links between a region and one other region
	// (Peer), both ways: the region still reaches etcd, SQL and the third
	// region. Not a reason to fail it over.
	CutPeer Kind = "cut_peer"
	// ShortPause sends SIGSTOP to a region's idemd for less than its
	// liveness budget (the liveness TTL less one keepalive interval:
	// 1.67 s at the default 2 s), then SIGCONT: a stall its liveness key
	// outlives (a GC pause, a noisy neighbour), not a reason to fail it
	// over.
	ShortPause Kind = "short_pause"
)

// Kinds lists every fault kind.
var Kinds = []Kind{KillRegion, PauseRegion, CutEtcd, CutSQL, CutBoth, Latency, ResetPeer, KillEtcdLeader, CrashPoint, ClockSkew,
	CutPeer, ShortPause}

// ShortPauseMax is the longest a ShortPause lasts (Plan cuts a longer
// draw to it): under the liveness
// budget at the default timings (ownership.DefaultLivenessTTL 2 s, less a
// keepalive interval of TTL/6), with room for scheduling delays.
const ShortPauseMax = 1500 * time.Millisecond

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
	// Region is the target region; empty for KillEtcdLeader.
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
	switch f.Kind {
	case Latency:
		s += fmt.Sprintf(" %s +%v±%v", f.Link, f.Latency, f.Jitter)
	case ResetPeer:
		s += " " + string(f.Link)
	case CrashPoint:
		s += " at " + f.Point
	case ClockSkew:
		s += fmt.Sprintf(" by %v", f.Skew)
	case CutPeer:
		s += " from " + f.Peer
	}
	return s + fmt.Sprintf(" for %v", f.For)
}
