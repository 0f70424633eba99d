package report

import (
	"time"

	"github.com/idemcoord/idemcoord/chaos/failpoint"
	"github.com/idemcoord/idemcoord/chaos/history"
	"github.com/idemcoord/idemcoord/chaos/validate"
)

// FalseFailover is a region failover that no fault of the run explains:
// the region was only slow, cut from a peer, briefly paused, or nothing at
// all happened to it.
type FalseFailover struct {
	// Region is the region failed over; Shards how many of its shards
	// moved.
	Region string
	Shards int
	// At is the failover's audit time, in seconds since the run began.
	At float64
}

// failoverSlack is how long after a region-loss fault's window closed a
// failover of its region is still that fault's: the liveness TTL, the
// confirmation and the moves can outlast a short fault, and the audit row
// is written once the moves committed.
const failoverSlack = 15 * time.Second

// falseFailovers returns the failovers of fs that no region-loss fault
// (RegionLoss: a kill, a pause past the lease, a cut from etcd or SQL, a
// crash point; or a reset of its etcd link, cutsEtcd) of the same region
// explains: one is explained when it was audited inside that fault's
// window, or within failoverSlack after it.
func falseFailovers(h history.History, fs []validate.Failover) []FalseFailover {
	var out []FalseFailover
	faults := h.Filter(history.KindFault)
	for _, f := range fs {
		at := h.At(f.At)
		explained := false
		for _, w := range faults {
			if w.SentTo == f.Region && !w.Skipped && (RegionLoss[w.Fault] || cutsEtcd(w)) &&
				at >= w.Call && at <= w.Return+int64(failoverSlack) {
				explained = true
				break
			}
		}
		if !explained {
			out = append(out, FalseFailover{Region: f.Region, Shards: f.Shards, At: seconds(at)})
		}
	}
	return out
}

// cutsEtcd reports whether fault op resets the connections of its
// region's etcd link (reset_peer on "etcd"): every keepalive's answer is
// reset, the client reconnects into the next reset, and a window longer
// than the liveness TTL leaves the region's lease to expire as a cut
// does (the region's own tracker sees its key gone). A failover of the
// region in that window is the fault's, not a false one. A reset of any
// other link, or latency on any link, never explains one.
func cutsEtcd(op history.Operation) bool {
	return op.Fault == string(failpoint.ResetPeer) && op.Link == string(failpoint.LinkEtcd)
}
