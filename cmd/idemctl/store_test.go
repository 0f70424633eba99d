package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

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

// regionConfigWithStore writes the us-east production config with its
// store block replaced by store, and returns the file's path.
func regionConfigWithStore(t *testing.T, store map[string]any) string {
	t.Helper()
	raw, err := os.ReadFile(prodConfig)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	doc["store"] = store
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "idemd.yaml")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestStoreStatusWithConfigAsksEachClustersRestURLs runs `idemctl store
// status --config` on a region's idemd.yaml whose patroni store block
// lists a real Patroni cluster's members' REST URLs: the table and the
// JSON show that cluster's primary, synchronous standby and timeline, as
// with --rest.
func TestStoreStatusWithConfigAsksEachClustersRestURLs(t *testing.T) {
	c := patronitest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	primary, err := c.Primary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	path := regionConfigWithStore(t, map[string]any{
		"backend": "patroni",
		"patroni": map[string]any{"clusters": []any{map[string]any{
			"name": "t", "dsn": c.DSN(), "regions": []string{"us-east", "eu-west", "ap-south"}, "rest": c.RESTURLs(),
		}}},
	})

	out, err := idemctl(t, "store", "status", "--config", path, "--output", "json")
	if err != nil {
		t.Fatal(err)
	}
	var views []storeClusterView
	if err := json.Unmarshal([]byte(out), &views); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(views) != 1 || views[0].Cluster != "t" || views[0].Primary != primary.Name || views[0].SyncStandby == "" ||
		views[0].SyncStandby == primary.Name || !views[0].Writable || views[0].Timeline < 1 || len(views[0].Members) != 3 {
		t.Fatalf("store status --config = %+v, want cluster t with primary %s, another member as sync standby, writable, 3 members", views, primary.Name)
	}
	table, err := idemctl(t, "store", "status", "--config", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CLUSTER", "TIMELINE", primary.Name, patronilocal.RoleLeader, patronilocal.RoleSyncStandby, primary.Addr} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

// TestStoreStatusWithConfigNamesAClusterWithoutRestURLs: a patroni block
// whose cluster lists no rest URLs is refused naming the field, and a
// config whose store is one PostgreSQL names store.backend.
func TestStoreStatusWithConfigNamesAClusterWithoutRestURLs(t *testing.T) {
	path := regionConfigWithStore(t, map[string]any{
		"backend": "patroni",
		"patroni": map[string]any{"clusters": []any{map[string]any{
			"name": "t", "dsn": "postgres://idemd@a,b,c/idemcoord?target_session_attrs=read-write", "regions": []string{"us-east", "eu-west", "ap-south"},
		}}},
	})
	_, err := idemctl(t, "store", "status", "--config", path)
	if err == nil || !strings.Contains(err.Error(), "store.patroni.clusters[0].rest") {
		t.Errorf("store status --config without rest URLs = %v, want an error naming store.patroni.clusters[0].rest", err)
	}
	_, err = idemctl(t, "store", "status", "--config", prodConfig)
	if err == nil || !strings.Contains(err.Error(), "store.backend") {
		t.Errorf("store status --config on a postgres store = %v, want an error naming store.backend", err)
	}
}
