package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/sqlstore"
)

// TestMigrationOnALiveStoreNeverConflictsWithAFenceMove restarts an
// instance into a store whose fences move: the first migration runs
// again while a transfer bumps a fence after the migration's snapshot
// was taken. The fence seed must leave a seeded store alone instead of
// meeting that fence (which, at SERIALIZABLE, failed the start with
// 40001 on every attempt while transfers kept moving fences).
func TestMigrationOnALiveStoreNeverConflictsWithAFenceMove(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, err := pgxpool.ParseConfig(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["default_transaction_isolation"] = "serializable"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := sqlstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	// Hold the migration between its first statement (its snapshot) and
	// the fence seed: its CREATE INDEX waits for this lock.
	lock, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx)
	if _, err := lock.Exec(ctx, "LOCK TABLE idempotency_records IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sqlstore.ApplyMigrationOnce(ctx, pool, "0001_records.sql") }()
	for waiting := false; !waiting; {
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%CREATE TABLE IF NOT EXISTS shard_fences%')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			t.Fatalf("migration finished before it waited for the lock: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	// A transfer moves a fence and commits after the migration's snapshot.
	if _, err := pool.Exec(ctx, "UPDATE shard_fences SET epoch = epoch + 1, owner_region = 'eu-west' WHERE shard = 5"); err != nil {
		t.Fatal(err)
	}
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("migration on a live store = %v, want nil", err)
	}
	var epoch int64
	var owner string
	if err := pool.QueryRow(ctx, "SELECT epoch, owner_region FROM shard_fences WHERE shard = 5").Scan(&epoch, &owner); err != nil {
		t.Fatal(err)
	}
	if epoch != 2 || owner != "eu-west" {
		t.Errorf("fence 5 after the migration = epoch %d owner %q, want the transfer's 2 eu-west", epoch, owner)
	}
}

// TestRestartingIntoAMigratedStoreWaitsForNoReader starts an instance
// while a long read of the records is open (an operator's query, a
// stats scrape): Migrate must not queue behind it for the table's
// strongest lock, which would also stall every claim queued behind that
// lock; migrations that only change what is already changed are skipped.
func TestRestartingIntoAMigratedStoreWaitsForNoReader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := pgtest.NewPool(t, 4)
	if err := sqlstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	reader, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback(ctx)
	if _, err := reader.Exec(ctx, "SELECT count(*) FROM idempotency_records"); err != nil {
		t.Fatal(err)
	}
	mctx, mcancel := context.WithTimeout(ctx, 5*time.Second)
	defer mcancel()
	if err := sqlstore.Migrate(mctx, pool); err != nil {
		t.Fatalf("Migrate with a reader open = %v, want it done without waiting for the reader", err)
	}
}
