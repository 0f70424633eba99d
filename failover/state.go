package failover

import (
	"fmt"
	"time"

	"github.com/idemcoord/idemcoord/ownership"
)

// RegionState is a region's liveness state as a Tracker derives it.
type RegionState string

// Region states. The cycle is healthy -> suspect -> failed -> recovering
// -> healthy; a suspect region whose instances come back before failure
// is confirmed goes straight back to healthy (nothing was moved).
const (
	// Healthy: at least one instance of the region holds a liveness key.
	Healthy RegionState = "healthy"
	// Suspect: no instance holds a key, for less than the confirmation
	// delay. Nothing is moved yet; gateways wait.
	Suspect RegionState = "suspect"
	// Failed: no instance has held a key for the confirmation delay. The
	// controller moves the region's shards away.
	Failed RegionState = "failed"
	// Recovering: instances registered again after a failure (keys with
	// create revisions newer than the failure), for less than the hold
	// time. Shards are not moved back automatically: failback is an
	// operator's decision.
	Recovering RegionState = "recovering"
)

// Value is the state as a number for the region-state gauge: 0 healthy,
// 1 suspect, 2 failed, 3 recovering.
func (s RegionState) Value() int64 {
	switch s {
	case Healthy:
		return 0
	case Suspect:
		return 1
	case Failed:
		return 2
	case Recovering:
		return 3
	}
	return -1
}

// regionStatus is what a Tracker knows of one region.
type regionStatus struct {
	state RegionState
	// since is when state was entered (tracker clock).
	since time.Time
	// seen maps the create revision of each present instance key to when
	// the tracker first saw it: a registration is identified by its
	// create revision, so a re-registered instance starts over.
	seen map[int64]time.Time
	// failedRev is the etcd revision of the read that confirmed the
	// failure; only keys created after it count as a recovery.
	failedRev int64
	// everLive records that the tracker saw the region alive at least
	// once, which lifts the startup grace.
	everLive bool
	// lastLive holds the create revisions of the registrations present
	// at the last read that found the region live: if every one of them
	// left cleanly (a left marker), the region is failed at once.
	lastLive map[int64]bool
	// failedCleanly records that the last move to Failed was because
	// every instance left cleanly (stopped), not because none answered
	// for the confirmation delay: the audit says which.
	failedCleanly bool
	// probing records that the Prober was asked about this suspect
	// period (once per period); found what it found (Down, CutOff, Silent: the
	// region is failed at once). Both are cleared by every change of
	// state.
	probing bool
	found   Finding
	// failedFound records that the last move to Failed was on the
	// Prober's evidence (what it found), before the confirmation delay
	// ran out; Unproven otherwise.
	failedFound Finding
}

// timing is what transitions depend on.
type timing struct {
	confirm, hold, grace time.Duration
	started              time.Time
}

// observe moves st given the instances of its region read at etcd
// revision rev at time now, and the create revisions of the
// registrations that left cleanly, and reports whether the state changed.
func (st *regionStatus) observe(now time.Time, rev int64, instances []ownership.Instance, left map[int64]bool, tm timing) bool {
	present := make(map[int64]time.Time, len(instances))
	for _, in := range instances {
		if st.state == Failed && in.CreateRevision <= st.failedRev {
			continue // not a new registration: cannot be a recovery
		}
		first, ok := st.seen[in.CreateRevision]
		if !ok {
			first = now
		}
		present[in.CreateRevision] = first
	}
	st.seen = present
	prev := st.state
	oldest := now
	for _, first := range present {
		if first.Before(oldest) {
			oldest = first
		}
	}
	live := len(present) > 0
	if live && st.state != Failed && st.state != Recovering {
		st.everLive = true
	}
	leftCleanly := !live && st.allLeft(left)
	if live {
		st.lastLive = make(map[int64]bool, len(present))
		for rev := range present {
			st.lastLive[rev] = true
		}
	}
	switch st.state {
	case "": // first observation
		st.set(now, Healthy)
		if !live {
			st.set(now, Suspect)
		}
	case Healthy:
		switch {
		case leftCleanly:
			st.fail(now, rev, true, Unproven)
		case !live:
			st.set(now, Suspect)
		}
	case Suspect:
		confirmed := now.Sub(st.since) >= tm.confirm && (st.everLive || now.Sub(tm.started) >= tm.grace)
		down := st.found != Unproven && st.everLive // a region never seen alive keeps the startup grace
		switch {
		case live:
			st.set(now, Healthy)
		case leftCleanly, confirmed, down:
			found := Unproven
			if !leftCleanly && !confirmed {
				found = st.found
			}
			st.fail(now, rev, leftCleanly, found)
		}
	case Failed:
		if live {
			st.set(now, Recovering)
		}
	case Recovering:
		switch {
		case !live:
			st.fail(now, rev, leftCleanly, Unproven)
		case now.Sub(oldest) >= tm.hold:
			st.set(now, Healthy)
			st.everLive = true
		}
	}
	return st.state != prev
}

// allLeft reports whether the registrations last seen live all left
// cleanly: nothing is there to come back, so there is nothing to confirm.
func (st *regionStatus) allLeft(left map[int64]bool) bool {
	if len(st.lastLive) == 0 {
		return false
	}
	for rev := range st.lastLive {
		if !left[rev] {
			return false
		}
	}
	return true
}

// deadline returns when the next timed transition of st falls due (zero
// when none is pending): the controller re-reads then instead of waiting
// for its next poll.
func (st *regionStatus) deadline(tm timing) time.Time {
	switch st.state {
	case Suspect:
		d := st.since.Add(tm.confirm)
		if g := tm.started.Add(tm.grace); !st.everLive && g.After(d) {
			d = g
		}
		return d
	case Recovering:
		var oldest time.Time
		for _, first := range st.seen {
			if oldest.IsZero() || first.Before(oldest) {
				oldest = first
			}
		}
		if !oldest.IsZero() {
			return oldest.Add(tm.hold)
		}
	}
	return time.Time{}
}

// fail moves st to Failed, confirmed by the read at rev: cleanly (every
// instance left) or found (the Prober's evidence) says why, for the
// audit.
func (st *regionStatus) fail(now time.Time, rev int64, cleanly bool, found Finding) {
	st.set(now, Failed)
	st.failedRev, st.failedCleanly, st.failedFound = rev, cleanly, found
}

func (st *regionStatus) set(now time.Time, s RegionState) {
	if st.state != s {
		st.state, st.since = s, now
		st.probing, st.found = false, Unproven
	}
}

// RegionStatus is a region's state for display (/readyz, idemctl).
type RegionStatus struct {
	// Region is the region's name.
	Region string `json:"region"`
	// State is its liveness state.
	State RegionState `json:"state"`
	// Since is when it entered State (the tracker's clock).
	Since time.Time `json:"since"`
	// Instances is how many liveness keys count for the region now.
	Instances int `json:"instances"`
}

// String formats the status for logs.
func (s RegionStatus) String() string {
	return fmt.Sprintf("%s %s since %s (%d instances)", s.Region, s.State, s.Since.Format(time.RFC3339), s.Instances)
}
