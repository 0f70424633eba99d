package sqlstore_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/patronistore"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
	"github.com/idemcoord/idemcoord/store/storetest"
)

// The patroni backend's conformance runs here, beside the SQL store's,
// because its harness reuses this package's tripwire proxy (the cuts
// that lose a commit's request or answer) on each cluster.

// TestPatroniStore runs the store contract's conformance suite on the
// patroni backend over three databases acting as three clusters, the
// shards spread over them by explicit ranges: every behaviour the
// coordinator relies on holds when each shard's calls go to its cluster
// and the rest fan out.
func TestPatroniStore(t *testing.T) {
	storetest.Run(t, patroniHarness(func(t *testing.T) []string {
		return []string{pgtest.NewDatabase(t), pgtest.NewDatabase(t), pgtest.NewDatabase(t)}
	}, nil, sqlstore.GroupCommit{}))
}

// clusterRanges spreads shard.DefaultCount shards over n clusters in
// contiguous ranges.
func clusterRanges(n int) func(shard int) int {
	per := (shard.DefaultCount + n - 1) / n
	return func(s int) int { return min(s/per, n-1) }
}

// patroniHarness is the suite's Harness on the patroni backend over the
// clusters fresh returns (one DSN each, fresh and empty). single, when
// set, turns a cluster's DSN into one on its current primary alone, for
// the cutting proxy (a multi-host DSN cannot go through one).
func patroniHarness(fresh func(t *testing.T) []string, single func(t *testing.T, dsn string) string,
	gc sqlstore.GroupCommit) storetest.Harness {
	var (
		mu   sync.Mutex
		dsns = map[store.Backend][]string{}
	)
	open := func(t *testing.T, urls []string, clock *storetest.Clock, bootstrap bool, logger *slog.Logger) *patronistore.Store {
		t.Helper()
		clusters := make([]patronistore.Cluster, len(urls))
		for i, u := range urls {
			s, err := sqlstore.Open(context.Background(), sqlstore.Config{Migrate: true, DSN: u, DBClock: clockOf(clock),
				MaxConns: 24, Seed: uint64(i + 1), GroupCommit: gc, Logger: logger})
			if err != nil {
				t.Fatalf("open cluster %d: %v", i, err)
			}
			clusters[i] = patronistore.Cluster{Name: "c" + string(rune('0'+i)), Store: s}
		}
		p, err := patronistore.New(clusters, shard.DefaultCount, clusterRanges(len(urls)), 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		if bootstrap {
			if err := p.BootstrapFences(context.Background(), shard.DefaultCount, func(int) string { return testRegion }); err != nil {
				t.Fatalf("bootstrap fences: %v", err)
			}
		}
		mu.Lock()
		dsns[p] = urls
		mu.Unlock()
		return p
	}
	urlsOf := func(t *testing.T, s store.Backend) []string {
		mu.Lock()
		defer mu.Unlock()
		u, ok := dsns[s]
		if !ok {
			t.Fatalf("store %T was not opened by the harness", s)
		}
		return u
	}
	clusterOf := func(t *testing.T, s store.Backend) *patronistore.Store {
		p, ok := s.(*patronistore.Store)
		if !ok {
			t.Fatalf("store is %T, want *patronistore.Store", s)
		}
		return p
	}
	return storetest.Harness{
		Open: func(t *testing.T, clock *storetest.Clock) store.Backend {
			return open(t, fresh(t), clock, true, nil)
		},
		Reopen: func(t *testing.T, s store.Backend, clock *storetest.Clock) store.Backend {
			return open(t, urlsOf(t, s), clock, true, nil)
		},
		OpenBare: func(t *testing.T) store.Backend { return open(t, fresh(t), nil, false, nil) },
		Raw: func(t *testing.T, s store.Backend, actor string) string {
			var out []string
			for _, c := range clusterOf(t, s).Clusters() {
				rows, err := c.Store.Pool().Query(context.Background(), `SELECT r::text FROM idempotency_records r
					WHERE $1 = '' OR actor_scope = $1 ORDER BY actor_scope, endpoint, key_hash`, actor)
				if err != nil {
					t.Fatal(err)
				}
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
			}
			return strings.Join(out, "\n")
		},
		SetFence: func(t *testing.T, s store.Backend, shard int, epoch int64, owner string) {
			p := clusterOf(t, s)
			c := p.Clusters()[p.ClusterOf(shard)].Store
			if _, err := c.Pool().Exec(context.Background(),
				`UPDATE shard_fences SET epoch = $2, owner_region = $3 WHERE shard = $1`, shard, epoch, owner); err != nil {
				t.Fatal(err)
			}
		},
		StoredRequests: func(t *testing.T, s store.Backend, actor string) int {
			n := 0
			for _, c := range clusterOf(t, s).Clusters() {
				n += count(t, c.Store, `SELECT count(*) FROM async_requests WHERE $1 = '' OR actor_scope = $1`, actor)
			}
			return n
		},
		Faulty: func(t *testing.T, s store.Backend, clock *storetest.Clock) (store.Backend, storetest.Cutter, func() int) {
			var proxies []*pgProxy
			var urls []string
			for _, u := range urlsOf(t, s) {
				if single != nil {
					u = single(t, u)
				}
				p := newPGProxy(t, u)
				proxies, urls = append(proxies, p), append(urls, p.dsn)
			}
			logs := &logRecorder{}
			via := open(t, urls, clock, false, slog.New(logs))
			cut := func(t *testing.T, op storetest.Op, loss storetest.Loss) (func() bool, func()) {
				match, okOp := map[storetest.Op]func(string) bool{
					storetest.OpClaim:  claimStatement,
					storetest.OpFinish: statement("UPDATE idempotency_records"),
				}[op]
				mode, okLoss := map[storetest.Loss]cutMode{storetest.LoseAnswer: loseAnswer, storetest.LoseRequest: loseRequest}[loss]
				if !okOp || !okLoss {
					t.Fatalf("cut %q %v: not a cut this harness makes", op, loss)
				}
				// Armed on every cluster: the write goes to one of them.
				var wires []*tripwire
				var removes []func()
				for _, p := range proxies {
					w, remove := p.cut(t, string(op), mode, true, match)
					wires, removes = append(wires, w), append(removes, remove)
				}
				fired := func() bool {
					for _, w := range wires {
						if w.Fired() {
							return true
						}
					}
					return false
				}
				return fired, func() {
					for _, r := range removes {
						r()
					}
				}
			}
			ambiguities := func() int {
				return len(logs.find("claim outcome ambiguous")) + len(logs.find("update outcome ambiguous"))
			}
			return via, cut, ambiguities
		},
	}
}
