package unsafemode

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/pglocal"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
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
	st, err := sqlstore.Open(ctx, sqlstore.Config{DSN: pg.DSN("postgres"), Migrate: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.BootstrapFences(ctx, shard.DefaultCount, func(int) string { return "us-east" }); err != nil {
		t.Fatal(err)
	}
	wrap, err := Wrap(SkewedExpiry, "us-east")
	if err != nil {
		t.Fatal(err)
	}
	unsafe := wrap(st)
	request := func(key, body string) store.ClaimRequest {
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
		return store.ClaimRequest{Scope: store.Scope{Actor: actor, Endpoint: "create-payment", Key: k}, Fingerprint: fp,
			Token:  fencing.Token{Shard: shard.Of(actor, shard.DefaultCount), Epoch: 1, Region: "us-east"},
			Worker: "test", Lease: 30 * time.Second, TTL: 24 * time.Hour}
	}
	begin := func(s store.Store, req store.ClaimRequest, want store.Outcome) store.Claim {
		t.Helper()
		c, err := s.Begin(ctx, req)
		if err != nil || c.Outcome != want {
			t.Fatalf("Begin = %v, %v; want %v", c.Outcome, err, want)
		}
		return c
	}
	done := store.Result{State: idempotency.Completed, Snapshot: store.Snapshot{Status: 201, Body: []byte(`{}`)}}

	req := request("k-1", `{"amount":"10.00"}`)
	first := begin(unsafe, req, store.FirstRun)
	begin(unsafe, req, store.InFlight) // running: the real st's answer
	if err := st.Finish(ctx, first.Lease, done); err != nil {
		t.Fatal(err)
	}
	begin(st, req, store.Replayed) // the real st replays
	again := begin(unsafe, req, store.FirstRun)
	if again.Record.OperationID == first.Record.OperationID {
		t.Errorf("the second run kept operation %s, want a new one", first.Record.OperationID)
	}
	if err := st.Finish(ctx, again.Lease, done); err != nil {
		t.Fatal(err)
	}
	changed := request("k-1", `{"amount":"99.00"}`)
	begin(st, changed, store.Mismatch)
	begin(unsafe, changed, store.FirstRun) // a changed body takes effect too
}
