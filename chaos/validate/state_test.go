package validate

import (
	"context"
	"crypto/sha256"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/chaos/history"
	"github.com/idemcoord/idemcoord/demo/bank"
	"github.com/idemcoord/idemcoord/demo/payments"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestReadStateReadsWhatTheStoreAndLedgerHold runs one operation through
// the real store, writes its payment and charge as the demo would, and
// checks that ReadState sees it and that a double charge written into the
// real ledger is flagged.
func TestReadStateReadsWhatTheStoreAndLedgerHold(t *testing.T) {
	ctx := context.Background()
	db, err := sqlstore.Open(ctx, sqlstore.Config{DSN: pgtest.NewDatabase(t), MaxConns: 4, Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pool := db.Pool()
	for _, m := range []func(context.Context) error{
		func(ctx context.Context) error { return sqlstore.Migrate(ctx, pool) },
		func(ctx context.Context) error { return bank.Migrate(ctx, pool) },
		func(ctx context.Context) error { return payments.Migrate(ctx, pool) },
	} {
		if err := m(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sh := shard.Of(fxActor, shard.DefaultCount)
	if _, err := pool.Exec(ctx, `UPDATE shard_fences SET owner_region = 'us-east' WHERE TRUE`); err != nil {
		t.Fatal(err)
	}
	c, err := db.Begin(ctx, store.ClaimRequest{
		Scope:       store.Scope{Actor: fxActor, Endpoint: "create-payment", Key: idempotency.Key(fxKey)},
		Fingerprint: idempotency.Fingerprint{Version: 1, Sum: sha256.Sum256([]byte("fp"))},
		Token:       fencing.Token{Shard: sh, Epoch: 1, Region: "us-east"}, Worker: "w", Lease: time.Minute, TTL: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	resp := []byte(`{"payment_id":"p1"}`)
	if err := db.Finish(ctx, c.Lease, store.Result{State: idempotency.Completed,
		Snapshot: store.Snapshot{Status: 201, Body: resp, ResourceID: "p1"}}); err != nil {
		t.Fatal(err)
	}
	op := c.Lease.OperationID
	if _, err := pool.Exec(ctx, `INSERT INTO payments (payment_id, operation_id, actor, amount, currency, reference, status,
		attempts, created_at, updated_at) VALUES ($1, $2, $3, 10, 'EUR', $4, 'succeeded', 1, now(), now())`,
		uuid.New(), op, fxActor, fxRef); err != nil {
		t.Fatal(err)
	}
	charge := func() {
		t.Helper()
		if _, err := pool.Exec(ctx, `INSERT INTO bank_charges (charge_id, operation_id, actor, amount, currency, created_at)
			VALUES ($1, $2, $3, 10, 'EUR', now())`, uuid.New(), op.String(), fxActor); err != nil {
			t.Fatal(err)
		}
	}
	charge()

	h := history.History{Start: time.Now(), Ops: []history.Operation{req(1, 0, 10, 201)}}
	h.Ops[0].OperationID, h.Ops[0].ResponseHash, h.Ops[0].Shard = op.String(), history.Hash(resp), sh
	h.Ops[0].BodyHash = history.Hash(ledgerBody("10.00", "EUR", fxRef))
	st, err := ReadState(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Records) != 1 || st.Records[0].ResponseHash != history.Hash(resp) || st.Records[0].KeyHash != sha256.Sum256([]byte(fxKey)) {
		t.Fatalf("records = %+v", st.Records)
	}
	if len(st.Fences) != shard.DefaultCount || len(st.Payments) != 1 || st.Payments[0].Amount != "10.00" || len(st.Charges) != 1 {
		t.Fatalf("fences %d, payments %+v, charges %+v", len(st.Fences), st.Payments, st.Charges)
	}
	if res := Check(h, st, opts()); !res.Safe() {
		t.Fatalf("clean run flagged:\n%s", describe(res.Violations))
	}

	// A store bootstrapped with fewer shards (shard_config, as the regions
	// work adds it): the first migration's rows past the count are unused.
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS shard_config (id INT4 PRIMARY KEY, shards INT4 NOT NULL);
		INSERT INTO shard_config (id, shards) VALUES (1, 16) ON CONFLICT (id) DO UPDATE SET shards = 16`); err != nil {
		t.Fatal(err)
	}
	if st, err = ReadState(ctx, pool); err != nil || len(st.Fences) != 16 {
		t.Fatalf("with 16 shards configured: %d fences (%v), want 16", len(st.Fences), err)
	}

	charge() // the bank charged the operation twice
	if st, err = ReadState(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if got := Check(h, st, opts()).Of(I2); len(got) == 0 {
		t.Fatal("a double charge in the ledger was not flagged")
	}
}
