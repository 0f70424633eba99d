package report

import (
	"strings"
	"time"

	"github.com/idemcoord/idemcoord/chaos/history"
)

// OtherClustersFloor is the least share of client calls with a final
// answer that actors on the store's other clusters must get while one
// cluster fails over: a store failover is one home region's, and the
// actors whose shards live elsewhere must not notice it.
const OtherClustersFloor = 0.999

// storeFailoverOpen bounds a store failover window whose first commit on
// the successor was never seen (the cluster's measurement gave up then).
const storeFailoverOpen = 90 * time.Second

// otherClusters measures, over every store failover of a known cluster
// (history.ProbeStoreFailover, its detail naming the cluster), the
// availability of the calls that returned inside the failover (from the
// primary's death to the first write committed on its successor) of
// actors whose shard is homed in another region, so on another cluster.
// A call counts once even when failovers overlap; a call the drill
// itself ended (history.Operation.Cut) counts in none.
func otherClusters(h history.History, cs []call, home func(int) string) Availability {
	var a Availability
	if home == nil {
		return a
	}
	type win struct {
		cluster  string
		from, to int64
	}
	var wins []win
	for _, op := range h.Filter(history.KindProbe) {
		if op.Probe != history.ProbeStoreFailover {
			continue
		}
		_, cl, ok := strings.Cut(op.Detail, ", cluster ")
		if !ok {
			continue
		}
		to := op.Return
		if to <= op.Call {
			to = op.Call + int64(storeFailoverOpen)
		}
		wins = append(wins, win{cl, op.Call, to})
	}
	for _, c := range cs {
		if c.shard < 0 || (c.cut && !c.ends) {
			continue
		}
		for _, w := range wins {
			if c.end >= w.from && c.end <= w.to && home(c.shard) != w.cluster {
				a.Calls++
				if c.ends {
					a.OK++
				}
				break
			}
		}
	}
	return a
}

// OtherClustersMet reports whether the other clusters' availability met
// OtherClustersFloor; true when there was nothing to measure.
func (r Report) OtherClustersMet() bool {
	share, ok := r.OtherClusters.Share()
	return !ok || share >= OtherClustersFloor
}
