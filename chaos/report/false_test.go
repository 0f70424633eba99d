package report

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/chaos/failpoint"
	"github.com/idemcoord/idemcoord/chaos/history"
	"github.com/idemcoord/idemcoord/chaos/validate"
)

// TestAFailoverOfARegionNoFaultTookOutCountsAsFalse: us-east is killed
// from 10 s to 20 s and fails over at 13 s; eu-west only gets latency on
// its links from 30 s to 40 s, and fails over at 35 s; ap-south fails over
// at 50 s with nothing done to it. The first is the kill's; the other two
// are false failovers, and the summary names them.
func TestAFailoverOfARegionNoFaultTookOutCountsAsFalse(t *testing.T) {
	start := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	at := func(s float64) int64 { return int64(s * float64(time.Second)) }
	in := synthetic()
	in.History = history.History{Start: start, Ops: []history.Operation{
		{Seq: 1, Kind: history.KindFault, Call: at(10), Effective: at(11), Return: at(20), SentTo: "us-east", Shard: -1,
			Fault: "kill_region", Detail: "kill_region us-east for 8s"},
		{Seq: 2, Kind: history.KindFault, Call: at(30), Return: at(40), SentTo: "eu-west", Shard: -1,
			Fault: "latency", Detail: "latency eu-west etcd +200ms±50ms for 10s"},
	}}
	in.Result.Failovers = []validate.Failover{
		{Region: "us-east", Shards: 341, At: start.Add(13 * time.Second)},
		{Region: "eu-west", Shards: 342, At: start.Add(35 * time.Second)},
		{Region: "ap-south", Shards: 341, At: start.Add(50 * time.Second)},
	}
	r := Build(in)
	if r.RegionFailovers != 3 {
		t.Errorf("region failovers = %d, want 3", r.RegionFailovers)
	}
	want := []FalseFailover{{Region: "eu-west", Shards: 342, At: 35}, {Region: "ap-south", Shards: 341, At: 50}}
	if len(r.FalseFailovers) != len(want) || r.FalseFailovers[0] != want[0] || r.FalseFailovers[1] != want[1] {
		t.Errorf("false failovers = %+v, want %+v", r.FalseFailovers, want)
	}
	var text strings.Builder
	r.WriteText(&text)
	if w := "region failovers: 3, false (a region no fault took out): 2; eu-west at 35.0s (342 shards); ap-south at 50.0s (341 shards)"; !strings.Contains(text.String(), w) {
		t.Errorf("text summary lacks %q:\n%s", w, text.String())
	}
}

// TestRegionLossKindsAreTheRegistrysAndExplainAFailover: the kinds the
// report measures failover for and accepts as the cause of a region
// failover are those failpoint's registry classes as a region loss, the
// same as when the report kept its own list; a stall that must not fail
// a region over is never among them.
func TestRegionLossKindsAreTheRegistrysAndExplainAFailover(t *testing.T) {
	want := map[string]bool{"kill_region": true, "pause_region": true, "cut_etcd": true, "cut_sql": true,
		"cut_both": true, "crash_point": true, "region_loss_full": true}
	if diff := cmp.Diff(want, RegionLoss); diff != "" {
		t.Errorf("RegionLoss (-want +got):\n%s", diff)
	}
	for _, d := range failpoint.Defs() {
		if d.Class == failpoint.ClassNoFailover && RegionLoss[string(d.Kind)] {
			t.Errorf("%s must not fail a region over, yet explains a failover", d.Kind)
		}
	}
}

// TestAFailoverWhileARegionsEtcdConnectionsAreResetIsNotFalse: resetting
// every etcd connection of eu-west for 7 s (mixed, seed 8) let its lease
// expire as a cut would, and its failover inside the window is the
// fault's. A reset of its SQL link explains nothing: ap-south's failover
// in such a window is false.
func TestAFailoverWhileARegionsEtcdConnectionsAreResetIsNotFalse(t *testing.T) {
	start := time.Date(2026, 12, 7, 9, 29, 28, 0, time.UTC)
	at := func(s float64) int64 { return int64(s * float64(time.Second)) }
	in := synthetic()
	in.History = history.History{Start: start, Ops: []history.Operation{
		{Seq: 1, Kind: history.KindFault, Call: at(3), Effective: at(3), Return: at(10.2), SentTo: "eu-west", Shard: -1,
			Fault: "reset_peer", Link: "etcd", Detail: "reset_peer eu-west etcd for 7.193s"},
		{Seq: 2, Kind: history.KindFault, Call: at(20), Effective: at(20), Return: at(27), SentTo: "ap-south", Shard: -1,
			Fault: "reset_peer", Link: "sql", Detail: "reset_peer ap-south sql for 7s"},
	}}
	in.Result.Failovers = []validate.Failover{
		{Region: "eu-west", Shards: 341, At: start.Add(6 * time.Second)},
		{Region: "ap-south", Shards: 342, At: start.Add(24 * time.Second)},
	}
	r := Build(in)
	want := []FalseFailover{{Region: "ap-south", Shards: 342, At: 24}}
	if len(r.FalseFailovers) != 1 || r.FalseFailovers[0] != want[0] {
		t.Errorf("false failovers = %+v, want %+v", r.FalseFailovers, want)
	}
}
