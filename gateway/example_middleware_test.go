package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/internal/testutil"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// exampleConfig writes a single-region idemd.yaml for a fresh database,
// as a middleware adopter would, and loads it as Example_middleware does.
func exampleConfig(t *testing.T, dsn string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "hs256.secret")
	if err := os.WriteFile(secretFile, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "idemd.yaml")
	y := fmt.Sprintf(`region: eu-west
listen: 127.0.0.1:0
upstream: http://127.0.0.1:1
store: {dsn: %q}
auth: {issuer: %s, audience: %s, hs256_secret_file: %q}
endpoints:
  - {name: create-payment, method: POST, path: /v1/payments}
`, dsn, issuer, audience, secretFile)
	if err := os.WriteFile(path, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestTheMiddlewareExampleServesOnAFreshDatabase: Example_middleware's
// own code path (coordinate, with the example's charge handler) on a
// fresh single-region database answers a first run 201, its retry the
// replay, and another body under the key 422; the handler runs once.
// Before the example gave the shards an owner, every request was 503
// region-unavailable, forever.
func TestTheMiddlewareExampleServesOnAFreshDatabase(t *testing.T) {
	ctx := context.Background()
	cfg := exampleConfig(t, pgtest.NewDatabase(t))
	var runs atomic.Int64
	g, closeAll, err := coordinate(ctx, cfg, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		charge(w, r)
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeAll)
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	alice := token(t, "alice")
	pay := func(body string) (int, http.Header, string) {
		return do(t, post(t, srv.URL+"/v1/payments", alice, "order-1", body))
	}
	st, hd, first := pay(`{"amount":"12.50"}`)
	if st != http.StatusCreated || hd.Get(gateway.HeaderReplayed) != "" {
		t.Fatalf("first run: %s, want 201", describe(st, hd, first))
	}
	if st, hd, b := pay(`{"amount":"12.50"}`); st != http.StatusCreated || hd.Get(gateway.HeaderReplayed) != "true" || b != first {
		t.Errorf("retry: %s, want the replay of %s", describe(st, hd, b), first)
	}
	if st, hd, b := pay(`{"amount":"99.00"}`); st != http.StatusUnprocessableEntity {
		t.Errorf("another body under the key: %s, want 422", describe(st, hd, b))
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the handler ran %d times, want once", n)
	}
}

// TestAGatewayOnAStoreWithoutFencesRefusesToStart: an embedder who skips
// the bootstrap gets an error from Start that names BootstrapFences and
// wraps store.ErrNotBootstrapped, not a gateway that answers every
// request 503 region-unavailable; a store whose shards all belong to
// another region is refused the same way.
func TestAGatewayOnAStoreWithoutFencesRefusesToStart(t *testing.T) {
	ctx := context.Background()
	s, err := sqlstore.Open(ctx, sqlstore.Config{Migrate: true, DSN: pgtest.NewDatabase(t), MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	start := func() error {
		g, err := gateway.Wrap(gateway.Config{Region: "test", Worker: "w", Store: s, Auth: verifier(t),
			Endpoints: endpoints(t, "")}, http.NotFoundHandler())
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		return g.Start(ctx)
	}
	if err := start(); !errors.Is(err, store.ErrNotBootstrapped) || !strings.Contains(err.Error(), "BootstrapFences") {
		t.Errorf("Start on a store never bootstrapped = %v, want ErrNotBootstrapped naming BootstrapFences", err)
	}
	if err := s.BootstrapFences(ctx, shard.DefaultCount, func(int) string { return "elsewhere" }); err != nil {
		t.Fatal(err)
	}
	if err := start(); err == nil || !strings.Contains(err.Error(), `"elsewhere"`) {
		t.Errorf("Start on a store owned by another region = %v, want an error naming the owner", err)
	}
}

// TestTheMiddlewareExamplesStoreBatches: the store Example_middleware
// opens (the zero sqlstore.Config but for DSN and Migrate) runs with
// group commit on: claims that queue behind a busy one go together as
// one batch statement, as with DefaultConfig.
func TestTheMiddlewareExamplesStoreBatches(t *testing.T) {
	ctx := context.Background()
	rd := sdkmetric.NewManualReader()
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(rd)))
	t.Cleanup(func() { otel.SetMeterProvider(noop.NewMeterProvider()) })
	dsn := pgtest.NewDatabase(t)
	cfg := exampleConfig(t, dsn)
	g, closeAll, err := coordinate(ctx, cfg, http.HandlerFunc(charge))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeAll)
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)

	// One claim holds the only claim slot: its shard's fence row is locked.
	holder := "holder"
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM shard_fences WHERE shard = $1 FOR UPDATE`,
		shard.Of("t/"+holder, cfg.Shards)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	send := func(subject, key string) {
		defer wg.Done()
		if st, hd, b := do(t, post(t, srv.URL+"/v1/payments", token(t, subject), key, `{"amount":"1"}`)); st != http.StatusCreated {
			t.Errorf("%s: %s, want 201", subject, describe(st, hd, b))
		}
	}
	wg.Add(1)
	go send(holder, "held")
	waitLockWaiter(t, conn)
	var others []string
	for i := 0; len(others) < 8; i++ {
		if s := fmt.Sprintf("member-%d", i); shard.Of("t/"+s, cfg.Shards) != shard.Of("t/"+holder, cfg.Shards) {
			others = append(others, s)
		}
	}
	wg.Add(len(others))
	for _, s := range others {
		go send(s, "k-"+s)
	}
	// Eight claims queue behind the held slot and go at once, as a full
	// batch, on the slot kept for full batches; then the holder goes.
	testutil.Eventually(t, 10*time.Second, testutil.Cond(func() bool { return batchCount(t, rd, "claim") > 0 }))
	tx.Rollback(ctx)
	wg.Wait()
}

// waitLockWaiter waits until a backend waits for a lock.
func waitLockWaiter(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, testutil.Cond(func() bool {
		var n int
		err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_locks WHERE NOT granted`).Scan(&n)
		return err == nil && n > 0
	}))
}

// batchCount is how many group-commit batch statements of statement the
// store reported to rd.
func batchCount(t *testing.T, rd *sdkmetric.ManualReader, statement string) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := rd.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			h, ok := m.Data.(metricdata.Histogram[int64])
			if m.Name != "idemcoord.store_batch_size" || !ok {
				continue
			}
			for _, dp := range h.DataPoints {
				if v, _ := dp.Attributes.Value("statement"); v.AsString() == statement {
					n += int64(dp.Count)
				}
			}
		}
	}
	return n
}
