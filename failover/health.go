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
}

// Error names the region, its state, for how long, and its live
// instances.
func (e *RegionNotHealthyError) Error() string {
	s := e.Status
	age := ""
	if !s.Since.IsZero() {
		age = fmt.Sprintf(" for %s", e.Now.Sub(s.Since).Round(time.Second))
	}
	why := "failing back to it would move its shards to a region that cannot serve them, and the controller would fail them over again"
	if e.Action == "drain" {
		why = "a drain is a planned move of a live region; a region that is down is failed over (idemctl failover), so what it left in flight is reconciled"
	}
	return fmt.Sprintf("%s %s refused: %s is %s%s with %d live instance(s); %s. Wait until it is healthy (idemctl regions), or force it",
		e.Action, s.Region, s.Region, s.State, age, s.Instances, why)
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
		return "", &RegionNotHealthyError{Action: action, Status: s, Now: clock.Or(r.Clock).Now()}
	}
	return fmt.Sprintf(" forced=true (%s was %s with %d live instances)", region, s.State, s.Instances), nil
}
