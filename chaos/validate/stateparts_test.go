package validate

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/demo/bank"
	"github.com/idemcoord/idemcoord/demo/payments"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// TestReadStatePartsTakesEachShardsFenceFromItsHomeCluster: on a store
// split over clusters (one per home region), the checker's final state
// holds every cluster's records and each shard's fence from the cluster
// that holds it (another cluster's row for the shard is no fence), and
// the ledger from the demo's own database.
func TestReadStatePartsTakesEachShardsFenceFromItsHomeCluster(t *testing.T) {
	ctx := context.Background()
	open := func(owner string, epoch int) *sqlstore.Store {
		db, err := sqlstore.Open(ctx, sqlstore.Config{DSN: pgtest.NewDatabase(t), MaxConns: 4, Migrate: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		if _, err := db.Pool().Exec(ctx, `UPDATE shard_fences SET owner_region = $1, epoch = $2 WHERE TRUE`, owner, epoch); err != nil {
			t.Fatal(err)
		}
		return db
	}
	east, west := open("us-east", 5), open("eu-west", 7)
	sh := shard.Of(fxActor, shard.DefaultCount)
	c, err := east.Begin(ctx, store.ClaimRequest{
		Scope:       store.Scope{Actor: fxActor, Endpoint: "create-payment", Key: idempotency.Key(fxKey)},
		Fingerprint: idempotency.Fingerprint{Version: 1, Sum: sha256.Sum256([]byte("fp"))},
		Token:       fencing.Token{Shard: sh, Epoch: 5, Region: "us-east"}, Worker: "w", Lease: time.Minute, TTL: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	ledger := pgtest.NewPool(t, 4)
	if err := bank.Migrate(ctx, ledger); err != nil {
		t.Fatal(err)
	}
	if err := payments.Migrate(ctx, ledger); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Exec(ctx, `INSERT INTO payments (payment_id, operation_id, actor, amount, currency, reference, status,
		attempts, created_at, updated_at) VALUES ($1, $2, $3, 10, 'EUR', $4, 'pending', 1, now(), now())`,
		uuid.New(), c.Lease.OperationID, fxActor, fxRef); err != nil {
		t.Fatal(err)
	}
	even := func(s int) bool { return s%2 == 0 }
	odd := func(s int) bool { return s%2 == 1 }
	st, err := ReadStateParts(ctx, []StorePart{{Name: "us-east", Pool: east.Pool(), Fences: even},
		{Name: "eu-west", Pool: west.Pool(), Fences: odd}}, ledger)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Records) != 1 || st.Records[0].OperationID != c.Lease.OperationID.String() {
		t.Fatalf("records = %+v, want the one claim of us-east's cluster", st.Records)
	}
	if len(st.Fences) != shard.DefaultCount {
		t.Fatalf("%d fences, want one per shard (%d)", len(st.Fences), shard.DefaultCount)
	}
	for i, f := range st.Fences {
		want, epoch := "us-east", int64(5)
		if f.Shard%2 == 1 {
			want, epoch = "eu-west", 7
		}
		if f.Shard != i || f.OwnerRegion != want || int64(f.Epoch) != epoch {
			t.Fatalf("fence %d = %+v, want shard %d owned by %s at epoch %d", i, f, i, want, epoch)
		}
	}
	if len(st.Payments) != 1 || st.Payments[0].Status != "pending" {
		t.Fatalf("payments = %+v, want the ledger's one", st.Payments)
	}
}
