package unsafemode

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/pglocal"
	"github.com/idemcoord/idemcoord/sqlstore"
)

// The skewed-expiry mode, on the real store, runs a finished key again
// under a new operation id where the real store replays it; a key still
// running is left to the real store (409).
func TestSkewedExpiryRunsAFinishedKeyAgainUnderANewOperation(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pg, err := pglocal.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	store, err := sqlstore.Open(ctx, sqlstore.Config{DSN: pg.DSN("postgres"), Migrate: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.BootstrapFences(ctx, fencing.DefaultShards, func(int) string { return "us-east" }); err != nil {
		t.Fatal(err)
	}
	wrap, err := Wrap(SkewedExpiry, "us-east")
	if err != nil {
		t.Fatal(err)
	}
	unsafe := wrap(store)
	request := func(key, body string) sqlstore.ClaimRequest {
		k, err := idempotency.ParseKeyHeader(key)
		if err != nil {
			t.Fatal(err)
		}
		fp, err := idempotency.ComputeFingerprint(idempotency.Request{Method: "POST", Path: "/v1/payments",
			ContentType: "application/json", Body: []byte(body)}, idempotency.FingerprintOptions{})
		if err != nil {
			t.Fatal(err)
		}
		actor := "drill/a1"
		return sqlstore.ClaimRequest{Scope: sqlstore.Scope{Actor: actor, Endpoint: "create-payment", Key: k}, Fingerprint: fp,
			Token:  fencing.Token{Shard: fencing.ShardOf(actor, fencing.DefaultShards), Epoch: 1, Region: "us-east"},
			Worker: "test", Lease: 30 * time.Second, TTL: 24 * time.Hour}
	}
	begin := func(s gateway.Store, req sqlstore.ClaimRequest, want sqlstore.Outcome) sqlstore.Claim {
		t.Helper()
		c, err := s.Begin(ctx, req)
		if err != nil || c.Outcome != want {
			t.Fatalf("Begin = %v, %v; want %v", c.Outcome, err, want)
		}
		return c
	}
	done := sqlstore.Result{State: idempotency.Completed, Snapshot: sqlstore.Snapshot{Status: 201, Body: []byte(`{}`)}}

	req := request("k-1", `{"amount":"10.00"}`)
	first := begin(unsafe, req, sqlstore.FirstRun)
	begin(unsafe, req, sqlstore.InFlight) // running: the real store's answer
	if err := store.Finish(ctx, first.Lease, done); err != nil {
		t.Fatal(err)
	}
	begin(store, req, sqlstore.Replayed) // the real store replays
	again := begin(unsafe, req, sqlstore.FirstRun)
	if again.Record.OperationID == first.Record.OperationID {
		t.Errorf("the second run kept operation %s, want a new one", first.Record.OperationID)
	}
	if err := store.Finish(ctx, again.Lease, done); err != nil {
		t.Fatal(err)
	}
	changed := request("k-1", `{"amount":"99.00"}`)
	begin(store, changed, sqlstore.Mismatch)
	begin(unsafe, changed, sqlstore.FirstRun) // a changed body takes effect too
}
