package probe

import (
	"context"
	"os"
	"testing"

	"github.com/idemcoord/idemcoord/chaos/history"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/sqlstore"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func openStore(t *testing.T) *sqlstore.Store {
	t.Helper()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	store, err := sqlstore.Open(ctx, sqlstore.Config{DSN: dsn, MaxConns: 4, Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	if err := sqlstore.Migrate(ctx, store.Pool()); err != nil {
		t.Fatal(err)
	}
	return store
}

func TestStaleEpochProbeRecordsTheFencesRefusal(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	actor := "chaos-probe/a"
	sh := shard.Of(actor, shard.DefaultCount)
	// The shard moved once: epoch 1 is the old epoch the probe writes with.
	if _, err := store.Pool().Exec(ctx, `UPDATE shard_fences SET epoch = 2, owner_region = 'eu-west' WHERE shard = $1`, sh); err != nil {
		t.Fatal(err)
	}
	rec := history.NewRecorder()
	op, err := StaleEpoch(ctx, store, rec, actor, shard.DefaultCount, 1)
	if err != nil {
		t.Fatal(err)
	}
	if op.Probe != history.ProbeStaleEpochRejected || op.Shard != sh {
		t.Fatalf("probe = %+v, want %s on shard %d", op, history.ProbeStaleEpochRejected, sh)
	}
	var n int
	if err := store.Pool().QueryRow(ctx, `SELECT count(*) FROM idempotency_records WHERE endpoint = $1`, Endpoint).Scan(&n); err != nil || n != 0 {
		t.Fatalf("records written by the refused probe = %d (%v), want 0", n, err)
	}
	if rec.Len() != 1 {
		t.Errorf("recorded %d operations, want 1", rec.Len())
	}
}

func TestSerializationProbeSeesA40001AndItsRetryCommit(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	rec := history.NewRecorder()
	op, err := Serialization(ctx, store.Pool(), rec)
	if err != nil {
		t.Fatal(err)
	}
	if op.Probe != history.ProbeRetry40001 {
		t.Fatalf("probe = %q, want %q", op.Probe, history.ProbeRetry40001)
	}
	var n int64
	if err := store.Pool().QueryRow(ctx, `SELECT n FROM chaos_probe WHERE id = 1`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("probe row = %d (%v), want 2: the first writer and the retry", n, err)
	}
}
