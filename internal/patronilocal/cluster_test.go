package patronilocal_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/internal/etcdtest"
	"github.com/idemcoord/idemcoord/internal/patronilocal"
	"github.com/idemcoord/idemcoord/internal/patronitest"
)

func TestMain(m *testing.M) { etcdtest.Main(m) }

// TestAPatroniClusterReplicatesSynchronouslyAndSwitchesOver runs one real
// cluster: Status names one primary and one synchronous standby, a write
// on the primary is on the synchronous standby, and a planned switchover
// moves the primary to the member asked for. Primary loss (Kill) and
// rejoin (Restart) are in failover_test.go.
func TestAPatroniClusterReplicatesSynchronouslyAndSwitchesOver(t *testing.T) {
	c := patronitest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	exec(t, ctx, c.DSN(), `CREATE TABLE w (id int PRIMARY KEY)`)

	t.Run("StatusNamesOnePrimaryAndOneSyncStandby", func(t *testing.T) {
		ms, err := c.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		roles := map[string]int{}
		for _, m := range ms {
			roles[m.Role]++
			if m.Region == "" || m.REST == "" || m.Addr == "" || m.Timeline < 1 {
				t.Errorf("member %+v lacks a region, address or timeline", m)
			}
		}
		if roles[patronilocal.RoleLeader] != 1 || roles[patronilocal.RoleSyncStandby] != 1 || len(ms) != 3 {
			t.Fatalf("roles = %v over %d members, want one leader and one sync standby of 3", roles, len(ms))
		}
	})

	t.Run("AWriteOnThePrimaryIsOnTheSyncStandby", func(t *testing.T) {
		exec(t, ctx, c.DSN(), `INSERT INTO w VALUES (1)`)
		sync := memberWithRole(t, ctx, c, patronilocal.RoleSyncStandby)
		dsn, _ := c.MemberDSN(sync.Name)
		waitRows(t, ctx, dsn, 1)
	})

	t.Run("SwitchoverMovesThePrimaryAndWritesGoOn", func(t *testing.T) {
		old := memberWithRole(t, ctx, c, patronilocal.RoleLeader)
		sync := memberWithRole(t, ctx, c, patronilocal.RoleSyncStandby)
		if err := c.Switchover(ctx, sync.Name); err != nil {
			t.Fatal(err)
		}
		now := memberWithRole(t, ctx, c, patronilocal.RoleLeader)
		if now.Name != sync.Name || now.Timeline <= old.Timeline {
			t.Fatalf("after switchover the leader is %+v, want %s on a timeline after %d", now, sync.Name, old.Timeline)
		}
		exec(t, ctx, c.DSN(), `INSERT INTO w VALUES (2)`)
		waitRows(t, ctx, c.DSN(), 2)
	})
}

// TestConfigValidateNamesEachBadField checks that Validate reports every
// bad field by its name.
func TestConfigValidateNamesEachBadField(t *testing.T) {
	good := patronilocal.DefaultConfig()
	good.Scope = "s"
	good.Members = []patronilocal.MemberSpec{{Name: "a"}, {Name: "b"}}
	good.EtcdEndpoints = []string{"http://127.0.0.1:2379"}
	if err := good.Validate(); err != nil {
		t.Fatalf("good config: %v", err)
	}
	for _, tc := range []struct {
		field string
		edit  func(*patronilocal.Config)
	}{
		{"scope", func(c *patronilocal.Config) { c.Scope = "a/b" }},
		{"namespace", func(c *patronilocal.Config) { c.Namespace = "x" }},
		{"members", func(c *patronilocal.Config) { c.Members = c.Members[:1] }},
		{"members[1].name", func(c *patronilocal.Config) { c.Members = []patronilocal.MemberSpec{{Name: "a"}, {Name: "a"}} }},
		{"etcd_endpoints[0]", func(c *patronilocal.Config) { c.EtcdEndpoints = []string{"127.0.0.1:2379"} }},
		{"ttl", func(c *patronilocal.Config) { c.TTL = 10 * time.Second }},
		{"retry_timeout", func(c *patronilocal.Config) { c.RetryTimeout = time.Second }},
		{"loop_wait", func(c *patronilocal.Config) { c.LoopWait = 0 }},
		{"ttl", func(c *patronilocal.Config) { c.LoopWait = 10 * time.Second; c.RetryTimeout = 6 * time.Second }},
		{"strict", func(c *patronilocal.Config) { c.Async = true }},
		{"quorum", func(c *patronilocal.Config) { c.Async, c.Strict, c.Quorum = true, false, true }},
		{"sync_standbys", func(c *patronilocal.Config) { c.SyncStandbys = 2 }},
	} {
		cfg := good
		tc.edit(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.field+":") {
			t.Errorf("edit for %s: Validate() = %v, want an error naming %s", tc.field, err, tc.field)
		}
	}
}

func memberWithRole(t *testing.T, ctx context.Context, c *patronilocal.Cluster, role string) patronilocal.MemberStatus {
	t.Helper()
	ms, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Role == role {
			return m
		}
	}
	t.Fatalf("no member is %s: %+v", role, ms)
	return patronilocal.MemberStatus{}
}

func exec(t *testing.T, ctx context.Context, dsn, sql string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// waitRows waits (bounded) until the member behind dsn has replayed n rows:
// a synchronous commit is flushed on the standby when acknowledged, and
// replayed moments later.
func waitRows(t *testing.T, ctx context.Context, dsn string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var got int
	for ctx.Err() == nil {
		conn, err := pgx.Connect(ctx, dsn)
		if err == nil {
			err = conn.QueryRow(ctx, `SELECT count(*) FROM w`).Scan(&got)
			conn.Close(ctx)
			if err == nil && got == n {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s has %d rows, want %d", dsn, got, n)
}
