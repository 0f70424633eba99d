package sqlstore_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// The store's share of a first run's heap allocations (Begin of a fresh
// key, then Finish with a completed result), counted on a real
// PostgreSQL with the default group commit and a metered store, as
// BenchmarkFirstRunVsPeer runs it. The requests and the result are built
// before counting, so the counts are the store's and pgx's alone.
//
// Measured on 2026-12-07 (docs/capacity.md, "Go allocations per first
// run"): 84 alone and 65-68 among 16 clients before the cuts of session
// 11, 42 and 42-45 after. About 17 of what is left are the deadline
// contexts of the two store calls and pgx's watch of them (and of each
// batch's), 2 the lease owner and the stored headers' text, 1 each the
// operation id and the lease.
const (
	// firstRunAllocsAlone bounds a first run whose claim and finish each
	// find a group-commit slot free (one client): the single statements.
	// AllocsPerRun's count is steady to within one; the race detector
	// adds about one.
	firstRunAllocsAlone = 46
	// firstRunAllocsBatched bounds a first run among 16 clients, where
	// most claims and finishes queue and go in batches. The count moves
	// by a few with the share of requests batched.
	firstRunAllocsBatched = 52
)

// allocEnv is a store opened as the benchmarks open theirs, and fresh
// claim requests for it.
type allocEnv struct {
	s   *sqlstore.Store
	seq atomic.Int64
	res store.Result
}

func newAllocEnv(t *testing.T) *allocEnv {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	s, err := sqlstore.Open(context.Background(), sqlstore.Config{Migrate: true, DSN: pgtest.NewDatabase(t),
		MaxConns: benchWorkers, Meter: mp.Meter("allocs")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	bootstrap(t, s)
	return &allocEnv{s: s, res: completed(`{"payment_id":"pay_1"}`)}
}

// requests returns n claim requests of fresh keys, spread over actors.
func (e *allocEnv) requests(t *testing.T, n int) []store.ClaimRequest {
	reqs := make([]store.ClaimRequest, n)
	for i := range reqs {
		k := e.seq.Add(1)
		actor := fmt.Sprintf("tenant/a%d", k%97)
		r := request(t, actor, fmt.Sprintf("key-%d", k), `{"amount":"12.50","currency":"EUR"}`)
		r.Token.Shard = shardOf(actor)
		reqs[i] = r
	}
	return reqs
}

// firstRun runs req's first run and fails t unless it is one.
func (e *allocEnv) firstRun(t *testing.T, req *store.ClaimRequest) {
	ctx := context.Background()
	c, err := e.s.Begin(ctx, *req)
	if err == nil && c.Outcome != store.FirstRun {
		err = fmt.Errorf("outcome %v", c.Outcome)
	}
	if err == nil {
		err = e.s.Finish(ctx, c.Lease, e.res)
	}
	if err != nil {
		t.Error(err)
	}
}

// mallocs is the process's heap allocations so far.
func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// TestAFirstRunInTheStoreAllocatesAtMost46AloneAnd52Batched: a first run through
// the store (Begin + Finish) allocates at most firstRunAllocsAlone times
// when its statements run alone and at most firstRunAllocsBatched times
// on average among 16 clients (mostly batched). Counts, not times: the
// allocations are the Go work per first run that a shared machine does
// not blur.
func TestAFirstRunInTheStoreAllocatesAtMost46AloneAnd52Batched(t *testing.T) {
	e := newAllocEnv(t)
	for _, r := range e.requests(t, 50) { // warm the pool's connections and statement caches
		e.firstRun(t, &r)
	}
	t.Run("alone", func(t *testing.T) {
		const runs = 300
		reqs := e.requests(t, runs+1)
		i := 0
		got := testing.AllocsPerRun(runs, func() { e.firstRun(t, &reqs[i]); i++ })
		t.Logf("%.1f allocations per first run, statements alone", got)
		if got > firstRunAllocsAlone {
			t.Errorf("a first run alone allocates %.1f times, budget %d", got, firstRunAllocsAlone)
		}
	})
	t.Run("batched", func(t *testing.T) {
		const clients, each = benchWorkers, 100
		reqs := e.requests(t, clients*each)
		var wg sync.WaitGroup
		before := mallocs()
		for c := range clients {
			wg.Go(func() {
				for i := range each {
					e.firstRun(t, &reqs[c*each+i])
				}
			})
		}
		wg.Wait()
		got := float64(mallocs()-before) / float64(clients*each)
		t.Logf("%.1f allocations per first run, 16 clients", got)
		if got > firstRunAllocsBatched {
			t.Errorf("a first run among 16 clients allocates %.1f times on average, budget %d", got, firstRunAllocsBatched)
		}
	})
}
