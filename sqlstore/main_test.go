package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/internal/etcdtest"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store/storetest"
)

// TestMain runs the tests on a throwaway PostgreSQL, and stops the
// embedded etcd the real Patroni clusters use as their DCS.
func TestMain(m *testing.M) { etcdtest.Main(m) }

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
	return openDSNWith(t, dsn, clock, sqlstore.GroupCommitOff)
}

// openDSNWith is openDSN with the group commit gc.
func openDSNWith(t testing.TB, dsn string, clock clock.Clock, gc sqlstore.GroupCommit) *sqlstore.Store {
	t.Helper()
	cfg := sqlstore.Config{Migrate: true, DSN: dsn, DBClock: clock, MaxConns: 70, Seed: 1, GroupCommit: gc}
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
const testRegion = storetest.Region

// bootstrap gives every shard of s to testRegion at epoch 1.
func bootstrap(t testing.TB, s *sqlstore.Store) {
	t.Helper()
	if err := s.BootstrapFences(context.Background(), shard.DefaultCount, func(int) string { return testRegion }); err != nil {
		t.Fatalf("bootstrap fences: %v", err)
	}
}

func count(t testing.TB, s *sqlstore.Store, q string, args ...any) int {
	t.Helper()
	var n int
	if err := s.Pool().QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func shardOf(actor string) int { return shard.Of(actor, shard.DefaultCount) }

// The request and result helpers are the conformance suite's: one set for
// both.
var (
	mustKey     = storetest.Key
	fingerprint = storetest.Fingerprint
	request     = storetest.Request
	completed   = storetest.Completed
	tally       = storetest.Tally
	mustBegin   = storetest.MustBegin
	withState   = storetest.WithState
	cleanup     = storetest.Cleanup
)
