package sqlstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/internal/pglocal"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
	"github.com/idemcoord/idemcoord/store/storetest"
)

// These tests are about a store on replicated PostgreSQL (Patroni): a
// commit the synchronous standby never confirmed, a primary demoted under
// the pool, a primary that froze. Each runs on a server of its own, since
// they change server-wide settings.

// ownServer starts a PostgreSQL server for one test, stopped at its end.
func ownServer(t *testing.T) *pglocal.Server {
	t.Helper()
	srv, err := pglocal.Start(context.Background())
	if err != nil {
		t.Fatalf("start postgres: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// admin runs statements on srv's postgres database as the superuser.
func admin(t *testing.T, srv *pglocal.Server, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, srv.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, q := range stmts {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// requireSyncRep makes every commit on srv of a session with
// synchronous_commit on wait for a synchronous standby that does not
// exist, as Patroni's synchronous_mode_strict does when no standby is
// left. The store must be bootstrapped (the probe writes shard_config:
// only a commit that wrote WAL waits). It returns once a probe commit
// was seen waiting (the setting
// reaches the server's processes asynchronously), and cancels it.
func requireSyncRep(t *testing.T, srv *pglocal.Server) {
	t.Helper()
	admin(t, srv, `ALTER SYSTEM SET synchronous_standby_names = 'nosuchstandby'`, `SELECT pg_reload_conf()`)
	ctx := context.Background()
	probe, err := pgx.Connect(ctx, syncDSN(srv))
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close(ctx)
	pid := probe.PgConn().PID()
	ended := make(chan error, 1)
	go func() { _, err := probe.Exec(ctx, `UPDATE shard_config SET shards = shards`); ended <- err }()
	c, err := pgx.Connect(ctx, srv.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for {
		var waiting bool
		if err := c.QueryRow(ctx, `SELECT count(*) > 0 FROM pg_stat_activity WHERE pid = $1 AND wait_event = 'SyncRep'`,
			int32(pid)).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-ended:
			// Committed before the setting arrived: probe again.
			if err != nil {
				t.Fatal(err)
			}
			go func() { _, err := probe.Exec(ctx, `UPDATE shard_config SET shards = shards`); ended <- err }()
			continue
		default:
		}
		if waiting {
			break
		}
		time.Sleep(time.Millisecond) // polls the server's state
	}
	if _, err := c.Exec(ctx, `SELECT pg_cancel_backend($1)`, int32(pid)); err != nil {
		t.Fatal(err)
	}
	<-ended
}

// syncDSN is srv's postgres database for sessions that wait for the
// synchronous standby (the test server's default is synchronous_commit
// off; a startup parameter overrides it).
func syncDSN(srv *pglocal.Server) string { return srv.DSN("postgres") + "&synchronous_commit=on" }

// cancelSyncRepWaits cancels (pg_cancel_backend, as an operator or a
// pooler would) every backend waiting on synchronous replication, until
// done is closed. It returns how many cancels it sent once done.
func cancelSyncRepWaits(t *testing.T, srv *pglocal.Server, done <-chan struct{}, after func(n int)) <-chan int {
	out := make(chan int, 1)
	c, err := pgx.Connect(context.Background(), srv.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer c.Close(context.Background())
		n := 0
		for {
			select {
			case <-done:
				out <- n
				return
			default:
			}
			var k int
			if err := c.QueryRow(context.Background(), `SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity
				WHERE wait_event = 'SyncRep'`).Scan(&k); err != nil {
				t.Error(err)
				out <- n
				return
			}
			if k > 0 {
				n += k
				if after != nil {
					after(n)
				}
			}
			time.Sleep(time.Millisecond) // polls the server's state; no lease or TTL is waited out
		}
	}()
	return out
}

// openOn opens a migrated, bootstrapped store on srv's postgres database
// whose sessions wait for the synchronous standby (once one is required).
func openOn(t *testing.T, srv *pglocal.Server, gc sqlstore.GroupCommit) *sqlstore.Store {
	t.Helper()
	return openDSNWith(t, syncDSN(srv), newClock(), gc)
}

// TestACommitTheStandbyNeverConfirmedIsNotASuccess: PostgreSQL answers a
// commit whose wait for synchronous replication was cancelled as a
// success with a WARNING, though the commit is on the primary only (a
// failover loses it). The claim must not come back FirstRun: it is
// ambiguous, and re-reading its own record on the same primary settles
// nothing until the standby confirms.
func TestACommitTheStandbyNeverConfirmedIsNotASuccess(t *testing.T) {
	srv := ownServer(t)
	s := openOn(t, srv, sqlstore.GroupCommit{})
	requireSyncRep(t, srv)

	done := make(chan struct{})
	cancels := cancelSyncRepWaits(t, srv, done, nil)
	c, err := s.Begin(context.Background(), storetest.Request(t, "actor-sync", "k1", `{"a":1}`))
	close(done)
	if n := <-cancels; n == 0 {
		t.Fatal("no commit waited for the synchronous standby: the test proves nothing")
	}
	if err == nil {
		t.Fatalf("Begin = %v with the commit on the primary only, want an ambiguous commit", c.Outcome)
	}
	if !errors.As(err, new(*store.AmbiguousCommitError)) || !errors.As(err, new(*sqlstore.UnreplicatedCommitError)) {
		t.Fatalf("Begin: %v, want *AmbiguousCommitError caused by *UnreplicatedCommitError", err)
	}
}

// TestACommitTheStandbyConfirmsAfterItsWarningStands: once the standby
// requirement is met again (here: lifted), the replication barrier
// passes and the claim that drew the warning is the caller's after all.
func TestACommitTheStandbyConfirmsAfterItsWarningStands(t *testing.T) {
	srv := ownServer(t)
	s := openOn(t, srv, sqlstore.GroupCommit{})
	requireSyncRep(t, srv)

	done := make(chan struct{})
	lifted := false
	cancels := cancelSyncRepWaits(t, srv, done, func(int) {
		if !lifted {
			lifted = true
			admin(t, srv, `ALTER SYSTEM RESET synchronous_standby_names`, `SELECT pg_reload_conf()`)
		}
	})
	req := storetest.Request(t, "actor-sync", "k1", `{"a":1}`)
	c, err := s.Begin(context.Background(), req)
	close(done)
	if n := <-cancels; n == 0 {
		t.Fatal("no commit waited for the synchronous standby: the test proves nothing")
	}
	if err != nil || c.Outcome != store.FirstRun {
		t.Fatalf("Begin = %v, %v; want FirstRun once the standby requirement is met", c.Outcome, err)
	}
	storetest.MustBegin(t, s, req, store.InFlight)
}

// TestAConnectionToAServerThatTakesNoWritesIsDropped: a pool's
// connections outlive a switchover (target_session_attrs is checked only
// when connecting). A connection whose server answers 25006 (a demoted
// primary, a standby) is closed, so the pool reconnects, and the call is
// an outage (*UnavailableError), not a plain SQL error.
func TestAConnectionToAServerThatTakesNoWritesIsDropped(t *testing.T) {
	srv := ownServer(t)
	ctx := context.Background()
	s, err := sqlstore.Open(ctx, sqlstore.Config{Migrate: true, DSN: srv.DSN("postgres"), DBClock: newClock(), MaxConns: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	bootstrap(t, s)
	storetest.MustBegin(t, s, storetest.Request(t, "actor-ro", "k0", `{}`), store.FirstRun)
	var pids []int32
	rows, err := s.Pool().Query(ctx, `SELECT pg_backend_pid()`)
	if err != nil {
		t.Fatal(err)
	}
	pids, err = pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Fatal(err)
	}

	admin(t, srv, `ALTER SYSTEM SET default_transaction_read_only = on`, `SELECT pg_reload_conf()`)
	for ro := ""; ro != "on"; { // the pool's one session takes the setting asynchronously
		if err := s.Pool().QueryRow(ctx, `SHOW default_transaction_read_only`).Scan(&ro); err != nil {
			t.Fatal(err)
		}
	}
	_, err = s.Begin(ctx, storetest.Request(t, "actor-ro", "k1", `{}`))
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Begin on a server that takes no writes: %v, want ErrUnavailable", err)
	}
	admin(t, srv, `ALTER SYSTEM RESET default_transaction_read_only`, `SELECT pg_reload_conf()`)

	var kept int
	c, err := pgx.Connect(ctx, srv.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)`, pids).Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if len(pids) != 1 || kept != 0 {
		t.Errorf("the pool's one connection (%v) met the read-only server: %d still open, want 0", pids, kept)
	}
	storetest.MustBegin(t, s, storetest.Request(t, "actor-ro", "k1", `{}`), store.FirstRun)
}

// TestAStoreCallOnAFrozenServerEnds: a frozen primary keeps its TCP
// connections open and answers nothing. A store call whose caller set no
// deadline still ends (the store's per-call budget), with an error.
func TestAStoreCallOnAFrozenServerEnds(t *testing.T) {
	srv := ownServer(t)
	p := newPGProxy(t, srv.DSN("postgres"))
	s := openDSNWith(t, p.dsn, newClock(), sqlstore.GroupCommit{})
	ctx := context.Background()
	if _, _, err := s.Fence(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.proxy.Toxics.AddToxicJson(strings.NewReader(`{"name":"freeze","type":"timeout","stream":"downstream","attributes":{"timeout":0}}`)); err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"Fence": func() error { _, _, err := s.Fence(ctx, 0); return err },
		"Ping":  func() error { return s.Ping(ctx) },
	} {
		if err := call(); err == nil {
			t.Errorf("%s on a frozen server succeeded", name)
		}
	}
}
