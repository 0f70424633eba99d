package sqlstore_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
	"github.com/idemcoord/idemcoord/store/storetest"
)

// TestStore runs the store contract's conformance suite on the SQL store,
// on real PostgreSQL at SERIALIZABLE (every connection's default).
func TestStore(t *testing.T) { storetest.Run(t, sqlHarness()) }

// TestStoreWithGroupCommit runs the suite with every claim and finish that
// arrives while another of its kind runs sent in a batch (MaxInFlight 1):
// the contract holds whether a request went alone or in a batch.
func TestStoreWithGroupCommit(t *testing.T) { storetest.Run(t, sqlHarnessWith(forcedBatching)) }

// sqlHarness is the suite's Harness on throwaway PostgreSQL databases.
func sqlHarness() storetest.Harness { return sqlHarnessWith(sqlstore.GroupCommitOff) }

// sqlHarnessWith is sqlHarness with the stores' group commit gc.
func sqlHarnessWith(gc sqlstore.GroupCommit) storetest.Harness {
	var (
		mu   sync.Mutex
		dsns = map[store.Backend]string{}
	)
	opened := func(s *sqlstore.Store, dsn string) store.Backend {
		mu.Lock()
		dsns[s] = dsn
		mu.Unlock()
		return s
	}
	dsnOf := func(t *testing.T, s store.Backend) string {
		mu.Lock()
		defer mu.Unlock()
		dsn, ok := dsns[s]
		if !ok {
			t.Fatalf("store %T was not opened by the harness", s)
		}
		return dsn
	}
	return storetest.Harness{
		Open: func(t *testing.T, clock *storetest.Clock) store.Backend {
			dsn := pgtest.NewDatabase(t)
			return opened(openDSNWith(t, dsn, clockOf(clock), gc), dsn)
		},
		Reopen: func(t *testing.T, s store.Backend, clock *storetest.Clock) store.Backend {
			dsn := dsnOf(t, s)
			return opened(openDSNWith(t, dsn, clockOf(clock), gc), dsn)
		},
		OpenBare: func(t *testing.T) store.Backend { return openBare(t) },
		Raw: func(t *testing.T, s store.Backend, actor string) string {
			rows, err := sqlOf(t, s).Pool().Query(context.Background(), `SELECT r::text FROM idempotency_records r
				WHERE $1 = '' OR actor_scope = $1 ORDER BY actor_scope, endpoint, key_hash`, actor)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var out []string
			for rows.Next() {
				var row string
				if err := rows.Scan(&row); err != nil {
					t.Fatal(err)
				}
				out = append(out, row)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			return strings.Join(out, "\n")
		},
		SetFence: func(t *testing.T, s store.Backend, shard int, epoch int64, owner string) {
			if _, err := sqlOf(t, s).Pool().Exec(context.Background(),
				`UPDATE shard_fences SET epoch = $2, owner_region = $3 WHERE shard = $1`, shard, epoch, owner); err != nil {
				t.Fatal(err)
			}
		},
		StoredRequests: func(t *testing.T, s store.Backend, actor string) int {
			return count(t, sqlOf(t, s), `SELECT count(*) FROM async_requests WHERE $1 = '' OR actor_scope = $1`, actor)
		},
		Faulty: func(t *testing.T, s store.Backend, clock *storetest.Clock) (store.Backend, storetest.Cutter, func() int) {
			p := newPGProxy(t, dsnOf(t, s))
			logs := &logRecorder{}
			via, err := sqlstore.Open(context.Background(), sqlstore.Config{Migrate: true, DSN: p.dsn, DBClock: clockOf(clock),
				MaxConns: 4, Seed: 5, Logger: slog.New(logs), GroupCommit: gc})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(via.Close)
			cut := func(t *testing.T, op storetest.Op, loss storetest.Loss) (func() bool, func()) {
				match, okOp := map[storetest.Op]func(string) bool{
					storetest.OpClaim:  claimStatement,
					storetest.OpFinish: statement("UPDATE idempotency_records"),
				}[op]
				mode, okLoss := map[storetest.Loss]cutMode{storetest.LoseAnswer: loseAnswer, storetest.LoseRequest: loseRequest}[loss]
				if !okOp || !okLoss {
					t.Fatalf("cut %q %v: not a cut this harness makes", op, loss)
				}
				w, remove := p.cut(t, string(op), mode, true, match)
				return w.Fired, remove
			}
			ambiguities := func() int {
				return len(logs.find("claim outcome ambiguous")) + len(logs.find("update outcome ambiguous"))
			}
			return via, cut, ambiguities
		},
	}
}

// clockOf is clock as the store's Clock: nil (the database's now()) when
// the suite passes none.
func clockOf(clock *storetest.Clock) clock.Clock {
	if clock == nil {
		return nil
	}
	return clock
}

// sqlOf is a store the harness opened, as the SQL store.
func sqlOf(t *testing.T, s store.Backend) *sqlstore.Store {
	t.Helper()
	ss, ok := s.(*sqlstore.Store)
	if !ok {
		t.Fatalf("store is %T, want *sqlstore.Store", s)
	}
	return ss
}
