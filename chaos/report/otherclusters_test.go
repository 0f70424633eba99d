package report

import (
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/chaos/history"
	"github.com/idemcoord/idemcoord/chaos/validate"
)

// otherClustersRun is a run over three home regions' store clusters in
// which us-east's cluster fails over from 10 s to 30 s: actors of shard 0
// (homed in us-east) get 503s meanwhile, those of shards 1 and 2 (homed
// elsewhere) get whatever ok says for their call at 20 s.
func otherClustersRun(ok bool) Input {
	var ops []history.Operation
	add := func(op history.Operation) { op.Seq = int64(len(ops) + 1); ops = append(ops, op) }
	for i := int64(0); i < 40; i++ {
		for sh := 0; sh < 3; sh++ {
			status := 201
			in := i >= 10 && i <= 30
			if in && sh == 0 {
				status = 503
			}
			if in && sh != 0 && i == 20 && !ok {
				status = 503
			}
			add(history.Operation{Kind: history.KindRequest, Call: i * sec, Return: i*sec + sec/10, Actor: "demo/a" + string(rune('0'+sh)),
				Intent: i + 1, ClientID: sh, SentTo: "eu-west", ServedBy: "eu-west", Status: status, Shard: sh})
		}
	}
	add(history.Operation{Kind: history.KindProbe, Probe: history.ProbeStoreFailover, Fault: "kill_store_primary",
		Call: 10 * sec, Return: 30 * sec, SentTo: "us-east-us-east", ServedBy: "us-east-eu-west", Shard: -1,
		Detail: "old timeline 1, new timeline 2, rejoined true, cluster us-east"})
	homes := []string{"us-east", "eu-west", "ap-south"}
	res := validate.Result{Checked: map[validate.Invariant]int{validate.I1: 1}}
	return Input{Scenario: "store-failover", Seed: 1, History: history.History{Ops: ops}, Result: res,
		Home: func(shard int) string { return homes[shard%3] }}
}

// TestTheOtherClustersActorsAreMeasuredDuringAStoreFailoverAndFlaggedBelowTheFloor:
// during one home region's store failover only the calls of actors whose
// shards live on the other clusters count (the failing cluster's own
// 503s do not), and a run whose other-cluster actors fell below 0.999 is
// not green and says so.
func TestTheOtherClustersActorsAreMeasuredDuringAStoreFailoverAndFlaggedBelowTheFloor(t *testing.T) {
	good := Build(otherClustersRun(true))
	if good.OtherClusters.Calls != 40 || good.OtherClusters.OK != 40 || !good.OtherClustersMet() {
		t.Fatalf("other clusters = %+v (met %v), want 40 of 40 calls of shards 1 and 2, met", good.OtherClusters,
			good.OtherClustersMet())
	}
	bad := Build(otherClustersRun(false))
	if bad.OtherClusters.Calls != 40 || bad.OtherClusters.OK != 38 || bad.OtherClustersMet() || bad.Green {
		t.Fatalf("other clusters = %+v (met %v, green %v), want 38 of 40, below the floor, not green",
			bad.OtherClusters, bad.OtherClustersMet(), bad.Green)
	}
	var b strings.Builder
	bad.WriteText(&b)
	if !strings.Contains(b.String(), "BELOW THE FLOOR") {
		t.Errorf("text summary does not flag the floor:\n%s", b.String())
	}
}
