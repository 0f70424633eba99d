package sqlstore_test

import (
	"context"
	"log"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// Example_runLocal claims a key, writes the business row and records the
// result in one serializable transaction: the payment row exists if and
// only if the key is COMPLETED, and a retry replays instead of inserting.
func Example_runLocal() {
	ctx := context.Background()
	s, err := sqlstore.Open(ctx, sqlstore.Config{Migrate: true, DSN: "postgres://localhost/idemcoord"})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	// Every shard needs an owner before anyone may write it (the daemon
	// does this at start, from the region topology).
	if err := s.BootstrapFences(ctx, shard.DefaultCount, func(int) string { return "us-east" }); err != nil {
		log.Fatal(err)
	}
	key, _ := idempotency.ParseKeyHeader(`"order-1"`)
	fp, _ := idempotency.ComputeFingerprint(idempotency.Request{Method: "POST", Path: "/v1/payments",
		ContentType: "application/json", Body: []byte(`{"amount":"12.50"}`)}, idempotency.FingerprintOptions{})
	actor := "acme/alice"
	req := store.ClaimRequest{
		Scope:       store.Scope{Actor: actor, Endpoint: "create-payment", Key: key},
		Fingerprint: fp,
		Token:       fencing.Token{Shard: shard.Of(actor, shard.DefaultCount), Epoch: 1, Region: "us-east"},
		Worker:      "example",
		Lease:       30 * time.Second,
		TTL:         24 * time.Hour,
	}
	c, err := s.RunLocal(ctx, req, func(ctx context.Context, tx pgx.Tx, op uuid.UUID) (store.Snapshot, error) {
		_, err := tx.Exec(ctx, `INSERT INTO payments (id, operation_id, amount) VALUES ($1, $2, '12.50')`, uuid.New(), op)
		return store.Snapshot{Status: 201, Body: []byte(`{"status":"succeeded"}`)}, err
	})
	if err != nil {
		log.Fatal(err)
	}
	switch c.Outcome {
	case store.FirstRun, store.Replayed:
		log.Printf("answer %d %s", c.Record.Snapshot.Status, c.Record.Snapshot.Body)
	case store.Mismatch:
		log.Print("422: the key was used for another request")
	default:
		log.Printf("409: retry after %s", c.RetryAfter)
	}
}
