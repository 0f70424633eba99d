package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/internal/patronilocal"
	"github.com/idemcoord/idemcoord/internal/patronitest"
)

// TestStoreStatusShowsEachClustersPrimarySyncStandbyLagAndTimeline runs
// `idemctl store status` against a real Patroni cluster, as a table and as
// JSON, then against it with its primary killed: the cluster is shown
// without a writable primary, never with the dead one as leader.
func TestStoreStatusShowsEachClustersPrimarySyncStandbyLagAndTimeline(t *testing.T) {
	c := patronitest.Start(t)
	rest := "--rest=t=" + strings.Join(c.RESTURLs(), ",")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	primary, err := c.Primary(ctx)
	if err != nil {
		t.Fatal(err)
	}

	out, err := idemctl(t, "store", "status", rest, "--output", "json")
	if err != nil {
		t.Fatal(err)
	}
	var views []storeClusterView
	if err := json.Unmarshal([]byte(out), &views); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(views) != 1 || views[0].Cluster != "t" || views[0].Primary != primary.Name || views[0].SyncStandby == "" ||
		views[0].SyncStandby == primary.Name || !views[0].Writable || views[0].Timeline < 1 || views[0].Lag < 0 || len(views[0].Members) != 3 {
		t.Fatalf("store status = %+v, want cluster t with primary %s, another member as sync standby, writable, 3 members", views, primary.Name)
	}

	table, err := idemctl(t, "store", "status", rest)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CLUSTER", "TIMELINE", primary.Name, patronilocal.RoleLeader, patronilocal.RoleSyncStandby, primary.Addr} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}

	if err := c.Kill(primary.Name); err != nil {
		t.Fatal(err)
	}
	out, err = idemctl(t, "store", "status", rest, "--output", "json")
	if err != nil {
		t.Fatal(err)
	}
	views = nil
	if err := json.Unmarshal([]byte(out), &views); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(views) != 1 || (views[0].Primary == primary.Name && views[0].Writable) {
		t.Errorf("after killing %s, store status = %+v, want it not shown as a writable primary", primary.Name, views)
	}
}

// TestStoreStatusRefusesAMalformedRestFlag names the flag and its form.
func TestStoreStatusRefusesAMalformedRestFlag(t *testing.T) {
	_, err := idemctl(t, "store", "status", "--rest", "http://127.0.0.1:8008")
	if err == nil || !strings.Contains(err.Error(), "--rest") || !strings.Contains(err.Error(), "NAME=URL") {
		t.Fatalf("store status --rest without a name = %v, want an error naming --rest and NAME=URL", err)
	}
}
