package sqlstore_test

import (
	"context"
	"fmt"
	"net/url"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/internal/patronilocal"
	"github.com/idemcoord/idemcoord/internal/patronitest"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
	"github.com/idemcoord/idemcoord/store/storetest"
)

// The tests below run on a real Patroni 4 cluster (internal/patronitest:
// three members, strict synchronous replication, the test binary's
// embedded etcd as DCS), reached as the coordinator reaches it: a
// multi-host DSN with target_session_attrs=read-write.

// patroniDBSeq names the databases created on a real cluster.
var patroniDBSeq atomic.Int64

// newPatroniDatabase creates an empty database on c's primary and
// returns c's multi-host DSN for it.
func newPatroniDatabase(t *testing.T, c *patronilocal.Cluster) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("p_%d", patroniDBSeq.Add(1))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	return withDatabase(t, c.DSN(), name)
}

// withDatabase returns dsn naming database db.
func withDatabase(t testing.TB, dsn, db string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + db
	return u.String()
}

// TestPatroniStoreOnARealPatroniCluster runs the conformance suite on the
// patroni backend over a real Patroni cluster: two databases on it act
// as two clusters (one Patroni cluster keeps the test's time modest),
// every commit waiting for the synchronous standby.
func TestPatroniStoreOnARealPatroniCluster(t *testing.T) {
	c := patronitest.Start(t)
	fresh := func(t *testing.T) []string { return []string{newPatroniDatabase(t, c), newPatroniDatabase(t, c)} }
	primaryOnly := func(t *testing.T, dsn string) string {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		p, err := c.Primary(ctx)
		if err != nil {
			t.Fatal(err)
		}
		single, err := c.MemberDSN(p.Name)
		if err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		return withDatabase(t, single, u.Path[1:])
	}
	storetest.Run(t, patroniHarness(fresh, primaryOnly, sqlstore.GroupCommit{}))
}

// TestAWriteAfterASwitchoverGoesToTheNewPrimary: a planned switchover
// (patronictl switchover) demotes the primary under the pool. Patroni 4
// restarts a demoted primary as a standby, so the pool's connection to
// it is cut (a connection kept open to a server that now refuses writes,
// 25006, is TestAConnectionToAServerThatTakesNoWritesIsDropped's case);
// the first claim after it loses its connection, settles on a new one,
// which the multi-host DSN takes to the new primary, and the caller sees
// a first run, not an error.
func TestAWriteAfterASwitchoverGoesToTheNewPrimary(t *testing.T) {
	c := patronitest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dsn := newPatroniDatabase(t, c)
	s, err := sqlstore.Open(ctx, sqlstore.Config{Migrate: true, DSN: dsn, DBClock: newClock(), MaxConns: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	bootstrap(t, s)
	storetest.MustBegin(t, s, storetest.Request(t, "tenant/alice", "before", `{}`), store.FirstRun)
	old, err := c.Primary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Switchover(ctx, ""); err != nil {
		t.Fatal(err)
	}
	now, err := c.Primary(ctx)
	if err != nil || now.Name == old.Name {
		t.Fatalf("primary after the switchover = %q (%v), want another than %q", now.Name, err, old.Name)
	}
	storetest.MustBegin(t, s, storetest.Request(t, "tenant/alice", "after", `{}`), store.FirstRun)
	var inRecovery bool
	if err := s.Pool().QueryRow(ctx, `SELECT pg_is_in_recovery()`).Scan(&inRecovery); err != nil || inRecovery {
		t.Errorf("after the claim the pool is on a standby (%v)", err)
	}
}

// TestAStoreCallDuringASwitchoverIsHeldAndServed: a planned switchover
// (the runbook's procedure: both standbys synchronous, then patronictl
// switchover) leaves its cluster without a primary for a second or two.
// Claims sent meanwhile, with the store's default budget, are held until
// the new primary takes them and are then served: none gives up as
// unavailable (a 503 to the client) and none runs twice.
func TestAStoreCallDuringASwitchoverIsHeldAndServed(t *testing.T) {
	c := patronitest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dsn := newPatroniDatabase(t, c)
	s, err := sqlstore.Open(ctx, sqlstore.Config{Migrate: true, DSN: dsn, DBClock: newClock(), MaxConns: 4, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	bootstrap(t, s)
	if err := c.SetSyncStandbys(ctx, 2); err != nil {
		t.Fatal(err)
	}

	const writers = 4
	var (
		stop            atomic.Bool
		served, refused atomic.Int64
		wg              sync.WaitGroup
		firstErr        atomic.Value
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				key := fmt.Sprintf("w%d-%d", w, i)
				cl, err := s.Begin(ctx, storetest.Request(t, "tenant/alice", key, `{}`))
				switch {
				case err != nil:
					refused.Add(1)
					firstErr.CompareAndSwap(nil, err)
				case cl.Outcome != store.FirstRun:
					refused.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Errorf("claim %s: outcome %v, want a first run", key, cl.Outcome))
				default:
					served.Add(1)
				}
			}
		}()
	}
	old, err := c.Primary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := served.Load()
	if err := c.Switchover(ctx, ""); err != nil {
		t.Fatal(err)
	}
	now, err := c.Primary(ctx)
	if err != nil || now.Name == old.Name {
		t.Fatalf("primary after the switchover = %q (%v), want another than %q", now.Name, err, old.Name)
	}
	// Writes go on on the new primary before the writers stop.
	for after := served.Load(); served.Load() < after+20; {
		if ctx.Err() != nil {
			t.Fatal("no claim served on the new primary")
		}
		runtime.Gosched()
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d claims served (%d before the switchover), %d refused", served.Load(), before, refused.Load())
	if n := refused.Load(); n != 0 {
		t.Errorf("%d claims during the switchover were not served (first: %v); want every one held, then served", n, firstErr.Load())
	}
}
