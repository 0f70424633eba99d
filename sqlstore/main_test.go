package sqlstore_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/sqlstore"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// newClock returns the database clock tests move by hand
// (sqlstore.Config.DBClock).
func newClock() *clock.Fake {
	return clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
}

// openStore opens a store on a fresh database.
func openStore(t testing.TB, clock clock.Clock) (*sqlstore.Store, string) {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	return openDSN(t, dsn, clock), dsn
}

func openDSN(t testing.TB, dsn string, clock clock.Clock) *sqlstore.Store {
	t.Helper()
	cfg := sqlstore.Config{Migrate: true, DSN: dsn, DBClock: clock, MaxConns: 70, Seed: 1}
	s, err := sqlstore.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(s.Close)
	bootstrap(t, s)
	return s
}

// testRegion owns every shard of a test store: an unowned shard admits
// nobody, so every store a test writes to is bootstrapped first.
const testRegion = "us-east"

// bootstrap gives every shard of s to testRegion at epoch 1.
func bootstrap(t testing.TB, s *sqlstore.Store) {
	t.Helper()
	if err := s.BootstrapFences(context.Background(), shard.DefaultCount, func(int) string { return testRegion }); err != nil {
		t.Fatalf("bootstrap fences: %v", err)
	}
}

func mustKey(t testing.TB, k string) idempotency.Key {
	t.Helper()
	key, err := idempotency.ParseKeyHeader(k)
	if err != nil {
		t.Fatalf("key %q: %v", k, err)
	}
	return key
}

func fingerprint(t testing.TB, body string) idempotency.Fingerprint {
	t.Helper()
	fp, err := idempotency.ComputeFingerprint(idempotency.Request{Method: "POST", Path: "/v1/payments",
		ContentType: "application/json", Body: []byte(body)}, idempotency.FingerprintOptions{})
	if err != nil {
		t.Fatalf("fingerprint: %v", err)
	}
	return fp
}

// request builds a claim request for actor/key/body on shard epoch 1, from
// testRegion.
func request(t testing.TB, actor, key, body string) sqlstore.ClaimRequest {
	t.Helper()
	return sqlstore.ClaimRequest{
		Scope:       sqlstore.Scope{Actor: actor, Endpoint: "POST /v1/payments", Key: mustKey(t, key)},
		Fingerprint: fingerprint(t, body),
		Token:       fencing.Token{Shard: shard.Of(actor, shard.DefaultCount), Epoch: 1, Region: testRegion},
		Worker:      "test",
		Lease:       30 * time.Second,
		TTL:         24 * time.Hour,
	}
}

func completed(body string) sqlstore.Result {
	return sqlstore.Result{State: idempotency.Completed, Snapshot: sqlstore.Snapshot{
		Status: 201, Body: []byte(body), ResourceID: "pay_1",
		Header: map[string][]string{"Content-Type": {"application/json"}}}}
}

func count(t testing.TB, s *sqlstore.Store, q string, args ...any) int {
	t.Helper()
	var n int
	if err := s.Pool().QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func tally(outcomes []sqlstore.Outcome) map[string]int {
	m := map[string]int{}
	for _, o := range outcomes {
		m[fmt.Sprint(o)]++
	}
	return m
}

func shardOf(actor string) int { return shard.Of(actor, shard.DefaultCount) }

// mustBegin claims req and checks the outcome.
func mustBegin(t testing.TB, s *sqlstore.Store, req sqlstore.ClaimRequest, want sqlstore.Outcome) sqlstore.Claim {
	t.Helper()
	c, err := s.Begin(context.Background(), req)
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	if c.Outcome != want {
		t.Fatalf("begin = %v (record %s, retry after %v), want %v", c.Outcome, c.Record.State, c.RetryAfter, want)
	}
	return c
}
