package sqlstore_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/internal/pglocal"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// growthBase is the size of the "empty" table the other sizes are compared
// with: a few replayable and in-flight keys, nothing more.
const growthBase = 1000

// growthPaths are the request paths measured at each size.
// "replay" picks any preloaded key (cold pages, the pessimistic case);
// "replay, last hour" picks a key created in the last hour of the 30-day
// spread, as most real retries are (an SDK's or a gateway's retry comes
// seconds to minutes after the first attempt). "409 in flight" picks a
// record under a live lease, all of them created in the last
// growthInFlight.
var growthPaths = [...]string{"first run", "replay", "replay, last hour", "409 in flight"}

// growthEnv is one store preloaded with size records.
type growthEnv struct {
	size int
	s    *sqlstore.Store
	req  store.ClaimRequest
	lat  [len(growthPaths)][]time.Duration
}

// BenchmarkGrowth: first run, replay and 409 latency (p50, p99) and
// throughput on records tables preloaded to each size in
// IDEMCOORD_GROWTH_SIZES (default 100000), side by side with a table of
// growthBase records on the same server, the sizes' operations
// interleaved one by one, 16 clients, IDEMCOORD_GROWTH_OPS operations per path and size (default
// 4000). Run it with -benchtime 1x: the load takes minutes, and any other
// count makes the testing package run the whole benchmark twice (once with
// b.N = 1, then with the count). The full run:
//
//	IDEMCOORD_GROWTH_SIZES=1000000,10000000,30000000 go test ./sqlstore -run '^$' \
//	    -bench Growth -benchtime 1x -timeout 3h
//
// IDEMCOORD_GROWTH_SHARED_BUFFERS (a PostgreSQL size, e.g. 6GB) runs the
// benchmark on a server of its own with that shared_buffers, sized as
// docs/capacity.md advises (memory for every index), instead of the tests'
// shared server with 256MB; its files go when the benchmark ends. One
// large size per run keeps a table from evicting another's pages:
//
//	IDEMCOORD_GROWTH_SIZES=30000000 IDEMCOORD_GROWTH_SHARED_BUFFERS=6GB go test ./sqlstore \
//	    -run '^$' -bench Growth -benchtime 1x -timeout 3h
func BenchmarkGrowth(b *testing.B) {
	sizes := []int{100000}
	if v := os.Getenv("IDEMCOORD_GROWTH_SIZES"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < growthBase {
				b.Fatalf("IDEMCOORD_GROWTH_SIZES: %q is not a record count of at least %d", f, growthBase)
			}
			sizes = append(sizes, n)
		}
	}
	newDB, warm := pgtest.NewDatabase, false
	if v := os.Getenv("IDEMCOORD_GROWTH_SHARED_BUFFERS"); v != "" {
		newDB, warm = growthServer(b, v), true
	}
	b.ResetTimer()
	growthRun(b, sizes, envInt(b, "IDEMCOORD_GROWTH_OPS", 4000), newDB, warm, os.Stderr, os.Stdout)
}

// growthServer starts a PostgreSQL server of the benchmark's own with
// shared_buffers set to sharedBuffers, stopped and removed when tb ends,
// and returns a function that creates a database on it.
func growthServer(tb testing.TB, sharedBuffers string) func(testing.TB) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := pglocal.Start(ctx, pglocal.SharedBuffers(sharedBuffers))
	if err != nil {
		tb.Fatalf("IDEMCOORD_GROWTH_SHARED_BUFFERS: %v", err)
	}
	tb.Cleanup(func() { srv.Close() })
	var seq int
	return func(tb testing.TB) string {
		seq++
		name := fmt.Sprintf("growth_%d", seq)
		conn, err := pgx.Connect(context.Background(), srv.DSN("postgres"))
		if err != nil {
			tb.Fatal(err)
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "CREATE DATABASE "+name); err != nil {
			tb.Fatal(err)
		}
		return srv.DSN(name)
	}
}

// growthRun loads a store per size (and the base) in a database newDB
// makes, settles them (settleGrowth, warm or not), measures every path on
// each, ops operations per path and size interleaved one by one across
// the sizes, and writes the table to out.
func growthRun(tb testing.TB, sizes []int, ops int, newDB func(testing.TB) string, warm bool, progress, out io.Writer) {
	ctx := context.Background()
	base := request(tb, "tenant/g0", "k", `{"amount":"12.50","currency":"EUR"}`)
	var envs []*growthEnv
	for _, size := range append([]int{growthBase}, sizes...) {
		dsn := newDB(tb)
		s, err := sqlstore.Open(ctx, sqlstore.Config{Migrate: true, DSN: dsn, MaxConns: benchWorkers})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(s.Close)
		bootstrap(tb, s)
		start := time.Now()
		loadGrowth(tb, s, size, base.Fingerprint.Sum[:], base.Fingerprint.Version, progress)
		fmt.Fprintf(progress, "loaded %d records in %s\n", size, time.Since(start).Round(time.Second))
		envs = append(envs, &growthEnv{size: size, s: s, req: base})
	}
	settleGrowth(tb, envs, warm, progress)
	for p := range growthPaths {
		interleave(tb, envs, p, ops)
	}
	fmt.Fprintf(out, "%-10s %-18s %9s %9s %9s %10s %12s %7s\n", "records", "path", "p50 ms", "p99 ms", "ops/s", "p99/empty", "table+idx MB", "idx MB")
	for _, e := range envs {
		var bytes, idx int64
		if err := e.s.Pool().QueryRow(ctx, `SELECT pg_total_relation_size('idempotency_records'),
			pg_indexes_size('idempotency_records')`).Scan(&bytes, &idx); err != nil {
			tb.Fatal(err)
		}
		for p, name := range growthPaths {
			lat := slices.Clone(e.lat[p])
			slices.Sort(lat)
			p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
			baseLat := slices.Clone(envs[0].lat[p])
			slices.Sort(baseLat)
			fmt.Fprintf(out, "%-10d %-18s %9.2f %9.2f %9.0f %10.2f %12d %7d\n", e.size, name,
				ms(p50), ms(p99), rate(lat), ms(p99)/ms(baseLat[len(baseLat)*99/100]), bytes>>20, idx>>20)
		}
	}
}

// interleave runs ops operations of path p on every env with benchWorkers
// clients, the operations of the envs interleaved one by one (operation i
// goes to env i mod len(envs)), so a burst of load on this shared machine
// falls on every size alike, and appends their latencies to each env.
func interleave(tb testing.TB, envs []*growthEnv, p, ops int) {
	run := make([]func() error, len(envs))
	lat := make([][]time.Duration, len(envs))
	for k, e := range envs {
		run[k], lat[k] = e.op(tb, p), make([]time.Duration, ops)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range benchWorkers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= ops*len(envs) {
					return
				}
				k := i % len(envs)
				t := time.Now()
				if err := run[k](); err != nil {
					tb.Error(err)
					return
				}
				lat[k][i/len(envs)] = time.Since(t)
			}
		})
	}
	wg.Wait()
	for k, e := range envs {
		e.lat[p] = append(e.lat[p], lat[k]...)
	}
}

// rate is the throughput benchWorkers clients would reach at these
// latencies (Little's law: clients / mean latency), in operations per
// second: the envs share the clients in an interleaved run, so wall time
// per env means nothing.
func rate(lat []time.Duration) float64 {
	var sum time.Duration
	for _, l := range lat {
		sum += l
	}
	return float64(benchWorkers) * float64(len(lat)) / sum.Seconds()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// op returns the operation of path p on e: a first run (Begin + Finish)
// on a fresh key, a replay of a random COMPLETED preloaded key (any, or
// one of the last hour), or a retry of a random preloaded key in flight
// under a live lease (409), all of which are recent.
func (e *growthEnv) op(tb testing.TB, p int) func() error {
	ctx := context.Background()
	switch p {
	case 0:
		return func() error {
			r := e.req
			n := int(rand.Int64())
			r.Scope.Actor, r.Scope.Endpoint = growthActor(n), growthEndpoint(n)
			r.Scope.Key = mustKey(tb, fmt.Sprintf("new-%d", n))
			r.Token.Shard = shardOf(r.Scope.Actor)
			c, err := e.s.Begin(ctx, r)
			if err != nil {
				return err
			}
			if c.Outcome != store.FirstRun {
				return fmt.Errorf("first run: outcome %v", c.Outcome)
			}
			return e.s.Finish(ctx, c.Lease, completed(`{"payment_id":"pay_1"}`))
		}
	case 1, 2:
		index := func() int { return rand.IntN(e.size) }
		if p == 2 {
			index = e.recentIndex(time.Hour)
		}
		return func() error {
			c, err := e.s.Begin(ctx, e.pickFrom(tb, index, func(i int) bool { return growthState(i) == "COMPLETED" }))
			if err == nil && c.Outcome != store.Replayed {
				err = fmt.Errorf("replay: outcome %v", c.Outcome)
			}
			return err
		}
	default:
		inFlight := e.recentIndex(growthInFlight)
		return func() error {
			c, err := e.s.Begin(ctx, e.pickFrom(tb, inFlight, func(i int) bool { return growthState(i) == "IN_PROGRESS" }))
			if err == nil && c.Outcome != store.InFlight {
				err = fmt.Errorf("409: outcome %v", c.Outcome)
			}
			return err
		}
	}
}

// pickFrom draws preloaded record indexes from index until want accepts
// one, and returns the claim request of that record.
func (e *growthEnv) pickFrom(tb testing.TB, index func() int, want func(i int) bool) store.ClaimRequest {
	for {
		i := index()
		if i < e.size && want(i) {
			r := e.req
			r.Scope.Actor, r.Scope.Endpoint = growthActor(i), growthEndpoint(i)
			r.Scope.Key = mustKey(tb, growthKey(i))
			r.Token.Shard = shardOf(r.Scope.Actor)
			return r
		}
	}
}

// recentIndex returns a function drawing the index of a random preloaded
// record created within window of the load: the loader gives record i the
// age i mod 30 days, in seconds (growthAge).
func (e *growthEnv) recentIndex(window time.Duration) func() int {
	cycle, w := int(growthCycle/time.Second), int(window/time.Second)
	return func() int { return rand.IntN(e.size/cycle+1)*cycle + rand.IntN(w) }
}

// TestGrowthBenchmarkRuns runs the growth benchmark on a small table, so
// the loader (COPY, index rebuild) and every measured path keep working.
func TestGrowthBenchmarkRuns(t *testing.T) {
	var table strings.Builder
	growthRun(t, []int{5000}, 64, growthServer(t, "128MB"), true, io.Discard, &table)
	if got := strings.Count(table.String(), "\n"); got != 1+2*len(growthPaths) {
		t.Fatalf("table has %d lines, want %d:\n%s", got, 1+2*len(growthPaths), table.String())
	}
	t.Log("\n" + table.String())
}
