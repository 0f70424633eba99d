// Package pgtest gives each test its own empty database on one throwaway
// PostgreSQL server per test binary, or on the server named by
// IDEMCOORD_TEST_DATABASE_URL (so the same suite can run on CockroachDB).
//
// Missing PostgreSQL binaries fail the test with a message naming the
// package to install; they never skip.
package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcoord/idemcoord/internal/pglocal"
)

// EnvURL names the environment variable holding an external server's URL.
const EnvURL = "IDEMCOORD_TEST_DATABASE_URL"

// EnvDurable names the environment variable that, set to 1, starts the
// local server with fsync, synchronous_commit and full_page_writes on
// (pglocal.Durable), for benchmarks of durable commits. Tests run with
// them off.
const EnvDurable = "IDEMCOORD_TEST_PG_DURABLE"

var (
	once    sync.Once
	server  *pglocal.Server
	baseURL string
	initErr error
	seq     atomic.Int64
)

// Main runs the tests of a package and stops the server they shared. Call it
// from TestMain: os.Exit(pgtest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if server != nil {
		server.Close()
	}
	return code
}

// Server returns the shared local server, starting it if needed. It fails
// the test when an external URL is configured, since such a server cannot be
// stopped and started by the test.
func Server(t testing.TB) *pglocal.Server {
	t.Helper()
	start(t)
	if server == nil {
		t.Fatalf("pgtest: this test stops and starts PostgreSQL and cannot run against %s", EnvURL)
	}
	return server
}

func start(t testing.TB) {
	t.Helper()
	once.Do(func() {
		if u := os.Getenv(EnvURL); u != "" {
			baseURL = u
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var opts []pglocal.Option
		switch v := os.Getenv(EnvDurable); v {
		case "", "0":
		case "1":
			opts = append(opts, pglocal.Durable())
		default:
			initErr = fmt.Errorf("pgtest: %s=%q: want 1 (fsync on) or 0", EnvDurable, v)
			return
		}
		server, initErr = pglocal.Start(ctx, opts...)
		if initErr == nil {
			baseURL = server.DSN("postgres")
		}
	})
	if initErr != nil {
		t.Fatalf("pgtest: cannot start PostgreSQL: %v", initErr)
	}
}

// NewDatabase creates an empty database for the test and returns its URL.
// The database is dropped when the test ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	start(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, baseURL)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("t_%d_%d", os.Getpid(), seq.Add(1))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	u, err := url.Parse(baseURL)
	if err != nil {
		t.Fatalf("pgtest: %s: %v", EnvURL, err)
	}
	u.Path = "/" + name
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), baseURL)
		if err != nil {
			return // server stopped by the test; the whole server goes at exit
		}
		defer conn.Close(context.Background())
		conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	return u.String()
}

// NewPool opens a pool of at most maxConns connections on a fresh
// database for the test, closed when the test ends.
func NewPool(t testing.TB, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}
