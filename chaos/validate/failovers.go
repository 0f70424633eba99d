package validate

import (
	"fmt"
	"time"
)

// FailoverAction is the repair_audit action of a region failover: the
// failover controller moved a failed region's shards away
// (failover.Controller).
const FailoverAction = "region_failover"

// Failover is one audited region failover.
type Failover struct {
	// Region is the region failed over; Shards how many of its shards the
	// controller moved; At the audit row's database time.
	Region string
	Shards int
	At     time.Time
}

// ParseFailoverAudit reads a failover from an audit row whose action is
// FailoverAction and whose detail is the controller's
// `region=us-east shards_moved=341 of 341`.
func ParseFailoverAudit(a Audit) (Failover, bool) {
	if a.Action != FailoverAction {
		return Failover{}, false
	}
	var f Failover
	var of int
	if _, err := fmt.Sscanf(a.Detail, "region=%s shards_moved=%d of %d", &f.Region, &f.Shards, &of); err != nil {
		return Failover{}, false
	}
	f.At = a.At
	return f, true
}

// failovers lists the region failovers audited in st, oldest first (the
// audit is read in time order).
func failovers(st State) []Failover {
	var out []Failover
	for _, a := range st.Audit {
		if f, ok := ParseFailoverAudit(a); ok {
			out = append(out, f)
		}
	}
	return out
}
