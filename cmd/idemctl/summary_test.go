package main

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/ownership"
)

// movedN is n shards moved from one region to another, ending state;
// failed of them with an error.
func movedN(n, failed int, from, to string, state ownership.State) []failover.Moved {
	out := make([]failover.Moved, n)
	for i := range out {
		out[i] = failover.Moved{Shard: i * 3, From: from, FromEpoch: 1, To: to, Epoch: 2, State: state}
		if i < failed {
			out[i] = failover.Moved{Shard: i * 3, From: from, FromEpoch: 1, Err: "etcd: context deadline exceeded"}
		}
	}
	return out
}

// TestRegionRepairsEndWithASummaryAndListShardsOnlyOnRequest: failback,
// failover, drain and accept print one summary line ("341 of 341 shards
// moved to eu-west"), the failed moves above it, and every shard only with
// --list.
func TestRegionRepairsEndWithASummaryAndListShardsOnlyOnRequest(t *testing.T) {
	spread := append(movedN(2, 0, "us-east", "eu-west", ownership.FailedOver), movedN(1, 0, "us-east", "ap-south", ownership.FailedOver)...)
	tests := []struct {
		name, action, region string
		moved                []failover.Moved
		list                 bool
		want                 string
	}{
		{name: "failback", action: "failback", region: "us-east", moved: movedN(341, 0, "eu-west", "us-east", ownership.Active),
			want: "failback us-east: 341 of 341 shards moved to us-east, ACTIVE\n"},
		{name: "failover to two regions", action: "failover", region: "us-east", moved: spread,
			want: "failover us-east: 3 of 3 shards moved: 1 to ap-south, 2 to eu-west, FAILED_OVER\n"},
		{name: "accept", action: "accept", region: "us-east", moved: movedN(341, 0, "eu-west", "eu-west", ownership.Active),
			want: "accept us-east: 341 of 341 shards accepted: ACTIVE, owner unchanged (eu-west)\n"},
		{name: "failures are shown", action: "drain", region: "us-east", moved: movedN(3, 1, "us-east", "eu-west", ownership.Active),
			want: "SHARD  FROM     FROM_EPOCH  TO  EPOCH  STATE  ERROR\n" +
				"0      us-east  1               0             etcd: context deadline exceeded\n" +
				"drain us-east: 2 of 3 shards moved to eu-west, ACTIVE; 1 failed: run it again to finish them\n"},
		{name: "--list", action: "failback", region: "us-east", moved: movedN(2, 0, "eu-west", "us-east", ownership.Active), list: true,
			want: "SHARD  FROM     FROM_EPOCH  TO       EPOCH  STATE   ERROR\n" +
				"0      eu-west  1           us-east  2      ACTIVE  \n" +
				"3      eu-west  1           us-east  2      ACTIVE  \n" +
				"failback us-east: 2 of 2 shards moved to us-east, ACTIVE\n"},
		{name: "nothing to move", action: "failback", region: "us-east",
			want: "failback us-east: no shard to move\n"},
		{name: "one shard", action: "move", region: "shard 17", moved: []failover.Moved{{Shard: 17, From: "us-east", FromEpoch: 3,
			To: "eu-west", Epoch: 4, State: ownership.Active}},
			want: "move shard 17: 1 of 1 shard moved to eu-west, ACTIVE\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := printMoves(&out, outputTable, tt.action, tt.region, tt.moved, tt.list); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, out.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

// TestShardsCountsTheSelectionAndListsOnlyWithList: `idemctl shards`
// with --home/--state counts the shards selected (not all of them) and
// says how many of all they are; it lists them only with --list.
func TestShardsCountsTheSelectionAndListsOnlyWithList(t *testing.T) {
	var views []shardView
	for i := range 5 {
		views = append(views, shardView{Shard: i, Home: "us-east", Owner: "eu-west", Epoch: 2, State: string(ownership.FailedOver)})
	}
	tests := []struct {
		name     string
		views    []shardView
		filtered bool
		list     bool
		want     string
	}{
		{name: "selection counted", views: views, filtered: true,
			want: "OWNER    STATE        SHARDS\neu-west  FAILED_OVER  5\n\n5 of 1024 shards selected; list them with --list\n"},
		{name: "selection listed", views: views[:2], filtered: true, list: true,
			want: "OWNER    STATE        SHARDS\neu-west  FAILED_OVER  2\n\n" +
				"SHARD  HOME     OWNER    EPOCH  STATE        MOVING TO\n" +
				"0      us-east  eu-west  2      FAILED_OVER  \n" +
				"1      us-east  eu-west  2      FAILED_OVER  \n" +
				"2 of 1024 shards selected\n"},
		{name: "empty selection", filtered: true, want: "0 of 1024 shards selected\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := writeShards(&out, outputTable, tt.views, 1024, tt.filtered, tt.list); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, out.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRegionsHintsAPendingFailback: a region that is healthy with a live
// instance while its home shards are owned elsewhere gets a hint that a
// failback is pending, naming where they are and the command; a region
// that is down, or whose shards are home, gets none.
func TestRegionsHintsAPendingFailback(t *testing.T) {
	regions := []*regionView{
		{Region: "us-east", State: failover.Healthy, Health: "up", Home: 342,
			HomeElsewhere: map[string]int{"eu-west": 171, "ap-south": 171}},
		{Region: "eu-west", State: failover.Healthy, Health: "up", Home: 341},
		{Region: "ap-south", State: failover.Failed, Health: "down", Home: 341,
			HomeElsewhere: map[string]int{"eu-west": 341}},
	}
	got := failbackHints(regions)
	want := []string{"failback pending: us-east is healthy, but 342 of its 342 home shards are elsewhere " +
		"(ap-south 171, eu-west 171); once what it left in flight is reconciled: idemctl failback us-east --reason TEXT"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("hints (-want +got):\n%s", diff)
	}
	regions[0].State = failover.Recovering
	if got := failbackHints(regions); len(got) != 0 {
		t.Errorf("a recovering region got a failback hint: %v", got)
	}
}
