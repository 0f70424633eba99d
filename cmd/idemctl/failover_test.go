package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/internal/etcdlocal"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/region"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func TestRepairCommandsNameTheMissingFlag(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // no dev cluster
	t.Setenv("IDEMCOORD_CONFIG", "")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"failover", "us-east", "--operator", "", "--reason", "x"}, "missing --operator"},
		{[]string{"failback", "us-east", "--operator", "me"}, "missing --reason"},
		{[]string{"drain", "us-east", "--operator", " "}, "missing --operator NAME (who is doing it; $USER is empty) and --reason"},
		{[]string{"failover", "accept", "--operator", "me", "--reason", "x"}, "exactly one of --shard N or --region R"},
		{[]string{"failover", "accept", "--shard", "1", "--region", "r", "--operator", "me", "--reason", "x"}, "exactly one of"},
		{[]string{"drain", "us-east", "--operator", "me", "--reason", "x", "-o", "yaml"}, "--output"},
		{[]string{"drain", "us-east", "--operator", "me", "--reason", "x"}, "--config not set"},
		{[]string{"failover"}, "idemctl failover needs REGION, the region to fail over"},
		{[]string{"audit", "--since", "yesterday", "--dsn", "postgres://x"}, "--since"},
		{[]string{"audit", "--shard", "1", "--actor", "a", "--dsn", "postgres://x"}, "at most one of --shard, --actor and --operation"},
		{[]string{"op", "reconcile", "0f9d0000-0000-0000-0000-000000000000", "--reason", "x", "--dsn", "postgres://x"},
			"exactly one of --ran (with --status N: the downstream ran it) and --not-run"},
		{[]string{"op", "lst"}, `unknown command "lst" for "idemctl op"; did you mean "list"?`},
		{[]string{"failover", "acept", "--operator", "me", "--reason", "x", "--config", threeRegions(t)},
			`"acept" is not a region of the topology (us-east, eu-west, ap-south); did you mean "idemctl failover accept"?`},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := idemctl(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %q", err, tc.want)
			}
		})
	}
}

// threeRegions writes a three-region configuration and returns its path.
func threeRegions(t *testing.T) string {
	t.Helper()
	t.Setenv("IDEMD_HS256_SECRET", "0123456789abcdef0123456789abcdef")
	path := filepath.Join(t.TempDir(), "idemd.yaml")
	if err := os.WriteFile(path, []byte(config.Example+"\nshards: 6\nregions:\n  - {name: us-east, url: http://u.invalid}\n"+
		"  - {name: eu-west, url: http://e.invalid}\n  - {name: ap-south, url: http://a.invalid}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestFailoverAcceptFailbackAndAuditFromTheCommandLine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	etcd, err := etcdlocal.Start(ctx, []string{"a"}, etcdlocal.Options{Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	dsn := pgtest.NewDatabase(t)
	rs := []config.Region{{Name: "us-east", URL: "http://u.invalid"}, {Name: "eu-west", URL: "http://e.invalid"},
		{Name: "ap-south", URL: "http://a.invalid"}}
	topo, err := region.New("us-east", rs)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlstore.Open(ctx, sqlstore.Config{Migrate: true, DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: etcd.Endpoints(), Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	dir := ownership.NewDirectory(cli, st)
	if err := dir.Bootstrap(ctx, topo, 6); err != nil {
		t.Fatal(err)
	}
	t.Setenv("IDEMD_HS256_SECRET", "0123456789abcdef0123456789abcdef")
	cfg := filepath.Join(t.TempDir(), "idemd.yaml")
	if err := os.WriteFile(cfg, []byte(config.Example+"\nshards: 6\nregions:\n  - {name: us-east, url: http://u.invalid}\n"+
		"  - {name: eu-west, url: http://e.invalid}\n  - {name: ap-south, url: http://a.invalid}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	conn := []string{"--config", cfg, "--etcd", strings.Join(etcd.Endpoints(), ","), "--dsn", dsn,
		"--operator", "alice", "--reason", "INC-42", "-o", "json"}

	type result struct {
		Action string `json:"action"`
		Shards []struct {
			Shard int    `json:"shard"`
			To    string `json:"to"`
			Epoch int64  `json:"epoch"`
			State string `json:"state"`
			Error string `json:"error"`
		} `json:"shards"`
	}
	run := func(args ...string) result {
		t.Helper()
		out, err := idemctl(t, append(args, conn...)...)
		if err != nil {
			t.Fatalf("idemctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		var r result
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("idemctl %s: output %q: %v", strings.Join(args, " "), out, err)
		}
		return r
	}
	// Only eu-west has a live instance: the failover's health filter
	// (one read of the liveness keys) lets it be the only target.
	live, err := ownership.NewLiveness(ownership.LivenessConfig{Client: cli, Region: "eu-west",
		Instance: "i1", TTL: time.Minute})
	if err == nil {
		err = live.Start(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	got := run("failover", "us-east")
	if len(got.Shards) != 2 || got.Shards[0].Shard != 0 || got.Shards[1].Shard != 3 {
		t.Fatalf("failover us-east moved %+v, want shards 0 and 3", got.Shards)
	}
	for _, s := range got.Shards {
		if s.To != "eu-west" || s.Epoch != 2 || s.State != "FAILED_OVER" || s.Error != "" {
			t.Errorf("failover of shard %d: %+v", s.Shard, s)
		}
	}
	if got := run("failover", "accept", "--shard", "3"); len(got.Shards) != 1 || got.Shards[0].State != "ACTIVE" {
		t.Errorf("accept --shard 3: %+v", got.Shards)
	}
	// us-east is back (a live instance; no controller runs here, so one
	// read of the liveness keys decides): failback may go ahead.
	back, err := ownership.NewLiveness(ownership.LivenessConfig{Client: cli, Region: "us-east",
		Instance: "i1", TTL: time.Minute})
	if err == nil {
		err = back.Start(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if got := run("failback", "us-east"); len(got.Shards) != 2 || got.Shards[0].To != "us-east" || got.Shards[0].Epoch != 3 {
		t.Errorf("failback us-east: %+v", got.Shards)
	}
	out, err := idemctl(t, "audit", "--dsn", dsn, "--shard", "3", "--since", "1h", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Rows  []store.AuditRow `json:"rows"`
		Total int              `json:"total"`
	}
	if err := json.Unmarshal([]byte(out), &page); err != nil || page.Total != len(page.Rows) {
		t.Fatalf("audit output %q: %v", out, err)
	}
	var actions []string
	for _, r := range page.Rows {
		actions = append(actions, r.Action+"/"+r.Operator+"/"+r.Reason)
	}
	want := []string{"move_fence/alice/INC-42", "failover_accept/alice/INC-42", "move_fence/alice/INC-42"}
	if strings.Join(actions, " ") != strings.Join(want, " ") {
		t.Errorf("audit --shard 3 = %q, want %q", actions, want)
	}
	table, err := idemctl(t, "audit", "--dsn", dsn)
	if err != nil || !strings.Contains(table, "failback") || !strings.HasPrefix(table, "AT") {
		t.Errorf("audit table: %v\n%s", err, table)
	}
}

// TestMoveRefusesADrainTimeoutTheStuckTransferRepairWouldCut: the failover
// controller finishes a transfer left FENCING for StuckAfter (1m), so a
// move draining that long would be cut under the operations it waits for:
// idemctl move refuses it before connecting, naming the flag and StuckAfter.
func TestMoveRefusesADrainTimeoutTheStuckTransferRepairWouldCut(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // no dev cluster
	t.Setenv("IDEMCOORD_CONFIG", "")
	_, err := idemctl(t, "move", "--shard", "1", "--to", "eu-west", "--drain-timeout", "2m", "--operator", "me", "--reason", "x")
	if err == nil || !strings.Contains(err.Error(), "--drain-timeout") || !strings.Contains(err.Error(), "StuckAfter") {
		t.Fatalf("move --drain-timeout 2m: %v, want a refusal naming --drain-timeout and StuckAfter", err)
	}
	_, err = idemctl(t, "move", "--shard", "1", "--to", "eu-west", "--drain-timeout", "30s", "--operator", "me", "--reason", "x")
	if err == nil || strings.Contains(err.Error(), "--drain-timeout") {
		t.Fatalf("move --drain-timeout 30s: %v, want only the missing --config", err)
	}
}
