package failover

import (
	"fmt"
	"time"

	"github.com/idemcoord/idemcoord/clock"
)

// RegionNotHealthyError is returned by Failback and Drain, without moving
// anything, when the region shards would go to (Failback) or the region
// being drained is not healthy with at least one live instance: shards
// failed back to a dead region are failed over again at once by the
// controller (each time under a new epoch, undoing every accept given in
// between), and a drain is a planned move of a live region, not a way to
// skip a failover's reconciliation. Repair.Force overrides it.
type RegionNotHealthyError struct {
	// Action is "failback" or "drain".
	Action string
	// Status is the region's status the refusal was decided on.
	Status RegionStatus
	// Now is when it was decided, for the state's age.
	Now time.Time
	// Hold is the controllers' hold time (Config.HoldTime): a recovering
	// region is healthy again once its instances have stayed that long.
	Hold time.Duration
}

// Error names the region, its state, for how long, and its live
// instances.
func (e *RegionNotHealthyError) Error() string {
	s := e.Status
	age := ""
	if !s.Since.IsZero() {
		age = fmt.Sprintf(" for %s", e.Now.Sub(s.Since).Round(time.Second))
	}
	if s.State == Recovering && s.Instances > 0 && !s.Since.IsZero() && e.Hold > 0 {
		// Not dead: held. Say which hold, and when it ends.
		end := s.Since.Add(e.Hold)
		left := max(end.Sub(e.Now), 0).Round(time.Second)
		return fmt.Sprintf("%s %s refused: %s is recovering%s with %s: its instances came back after a failure, "+
			"and the failover controller calls it healthy once they have stayed up for the hold time (%s), "+
			"at %s, in %s; a %s before then could be undone by a new failure. Wait until then (idemctl regions), or force it",
			e.Action, s.Region, s.Region, age, liveInstances(s.Instances), e.Hold, end.UTC().Format(time.RFC3339), left, e.Action)
	}
	why := "failing back to it would move its shards to a region that cannot serve them, and the controller would fail them over again"
	if e.Action == "drain" {
		why = "a drain is a planned move of a live region; a region that is down is failed over (idemctl failover), so what it left in flight is reconciled"
	}
	return fmt.Sprintf("%s %s refused: %s is %s%s with %s; %s. Wait until it is healthy (idemctl regions), or force it",
		e.Action, s.Region, s.Region, s.State, age, liveInstances(s.Instances), why)
}

// liveInstances says how many live instances a region has, in words.
func liveInstances(n int) string {
	switch n {
	case 0:
		return "no live instance"
	case 1:
		return "1 live instance"
	}
	return fmt.Sprintf("%d live instances", n)
}

// usable reports whether a region can take shards: healthy in the
// controller's view and with a live instance now.
func usable(s RegionStatus) bool { return s.State == Healthy && s.Instances > 0 }

// status returns a region's status from r.Status, or a healthy one when
// r.Status is nil.
func (r Repair) status(region string) RegionStatus {
	if r.Status == nil {
		return RegionStatus{Region: region, State: Healthy, Instances: 1}
	}
	return r.Status(region)
}

// refuse returns the refusal of action on region (nil when the region is
// usable or r.Force is set) and, for the audit, what was forced.
func (r Repair) refuse(action, region string) (forced string, err error) {
	s := r.status(region)
	if usable(s) {
		return "", nil
	}
	if !r.Force {
		return "", &RegionNotHealthyError{Action: action, Status: s, Now: clock.Or(r.Clock).Now(), Hold: r.holdTime()}
	}
	return fmt.Sprintf(" forced=true (%s was %s with %s)", region, s.State, liveInstances(s.Instances)), nil
}

// holdTime is r.HoldTime, or DefaultHoldTime.
func (r Repair) holdTime() time.Duration {
	if r.HoldTime > 0 {
		return r.HoldTime
	}
	return DefaultHoldTime
}
