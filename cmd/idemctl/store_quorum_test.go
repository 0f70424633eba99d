package main

import (
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/internal/patronirest"
)

// TestStoreStatusOfAQuorumClusterNamesItsQuorumStandbysAndIsWritable: a
// cluster in quorum commit (as idemd dev --store ha, the drills and
// deploy/patroni run theirs) reports its standbys as quorum_standby, not
// sync_standby. Its view lists both as the standbys commits wait for,
// takes the least lag of the streaming ones, and is writable; it is not
// once neither streams.
func TestStoreStatusOfAQuorumClusterNamesItsQuorumStandbysAndIsWritable(t *testing.T) {
	members := []patronirest.MemberStatus{
		{Name: "us-east-us-east", Role: patronirest.RoleLeader, State: patronirest.StateRunning, Timeline: 3},
		{Name: "us-east-eu-west", Role: patronirest.RoleQuorumStandby, State: patronirest.StateStreaming, Lag: 4096},
		{Name: "us-east-ap-south", Role: patronirest.RoleQuorumStandby, State: patronirest.StateStreaming, Lag: 0},
	}
	v := storeClusterView{Cluster: "us-east", Lag: -1, Members: members}
	v.summarize(func(patronirest.MemberStatus) bool { return true })
	if v.Primary != "us-east-us-east" || v.SyncStandby != "us-east-eu-west,us-east-ap-south" || !v.Quorum ||
		v.Lag != 0 || v.Timeline != 3 || !v.Writable {
		t.Fatalf("view = %+v; want primary us-east-us-east, both quorum standbys, lag 0, timeline 3, writable", v)
	}
	if rows := storeTable([]storeClusterView{v}).rows; strings.Contains(strings.Join(rows[len(rows)-1], " "), "NOT WRITABLE") {
		t.Errorf("table of a writable quorum cluster says %v", rows[len(rows)-1])
	}

	for i := 1; i < len(members); i++ {
		members[i].State = "stopped"
	}
	v = storeClusterView{Cluster: "us-east", Lag: -1, Members: members}
	v.summarize(func(patronirest.MemberStatus) bool { return true })
	if v.Writable {
		t.Fatalf("view = %+v with no quorum standby streaming; want not writable", v)
	}
}
