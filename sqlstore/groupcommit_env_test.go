package sqlstore_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/internal/testutil"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// forcedBatching sends every claim or finish that arrives while one of its
// kind runs into the next batch.
var forcedBatching = sqlstore.GroupCommit{MaxInFlight: 1, MaxBatch: 16}

// gcStore is a store with group commit forced on, its batch-size metric,
// and a direct store on the same database for blocking and checking.
type gcStore struct {
	s, direct *sqlstore.Store
	rd        *sdkmetric.ManualReader
	logs      *logRecorder
}

// openGroupCommit opens a batching store on dsn (a proxy's DSN, or the
// database's), and a direct store, without batching, on the database
// itself (directDSN): the tests block and check through it.
func openGroupCommit(t *testing.T, dsn, directDSN string, clk clock.Clock, tracer pgx.QueryTracer) gcStore {
	t.Helper()
	direct := openDSN(t, directDSN, clk)
	rd := sdkmetric.NewManualReader()
	logs := &logRecorder{}
	s, err := sqlstore.Open(context.Background(), sqlstore.Config{DSN: dsn, DBClock: clk, MaxConns: 70,
		Seed: 3, Tracer: tracer, GroupCommit: forcedBatching, Logger: slog.New(logs),
		Meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(rd)).Meter("gc")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return gcStore{s: s, direct: direct, rd: rd, logs: logs}
}

// openGroupCommitWith opens a store on dsn with the group commit gc and
// its own batch-size metric (s and rd of the result; the rest is unset).
func openGroupCommitWith(t *testing.T, dsn string, clk clock.Clock, gc sqlstore.GroupCommit) gcStore {
	t.Helper()
	rd := sdkmetric.NewManualReader()
	s, err := sqlstore.Open(context.Background(), sqlstore.Config{DSN: dsn, DBClock: clk, MaxConns: 70, Seed: 4,
		GroupCommit: gc, Meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(rd)).Meter("gc")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return gcStore{s: s, rd: rd}
}

// holdSlot makes fn (one claim or one finish of g.s, on actor's shard)
// take the only slot of its kind and wait on that shard's fence row,
// locked FOR UPDATE by a transaction of g.direct. release lets it go and
// waits for fn.
func (g gcStore) holdSlot(t *testing.T, actor string, fn func()) (release func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := g.direct.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM shard_fences WHERE shard = $1 FOR UPDATE`, shardOf(actor)); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	if err := waitForLockWaiters(ctx, g.direct, 1); err != nil {
		tx.Rollback(ctx)
		t.Fatal(err)
	}
	return func() {
		tx.Rollback(ctx)
		<-done
	}
}

// waitQueued waits until claims and finishes requests wait for a batch.
func (g gcStore) waitQueued(t *testing.T, claims, finishes int) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, testutil.Cond(func() bool {
		c, f := g.s.Queued()
		return c == claims && f == finishes
	}))
}

// batches returns how many batch statements of statement (claim,
// finish) ran and how many requests they carried.
func (g gcStore) batches(t *testing.T, statement string) (n, members int64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := g.rd.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			h, ok := m.Data.(metricdata.Histogram[int64])
			if m.Name != "idemcoord.store_batch_size" || !ok {
				continue
			}
			for _, dp := range h.DataPoints {
				if v, _ := dp.Attributes.Value("statement"); v.AsString() == statement {
					n, members = n+int64(dp.Count), members+dp.Sum
				}
			}
		}
	}
	return n, members
}

// actorsOff returns n actors none of which is on actor's shard (so a
// batch of theirs does not wait on that shard's held fence row).
func actorsOff(actor string, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		a := "tenant/member-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if shardOf(a) != shardOf(actor) {
			out = append(out, a)
		}
	}
	return out
}

// claimAll runs Begin for every request at once and returns the results
// in order.
func claimAll(s *sqlstore.Store, reqs []store.ClaimRequest) ([]store.Claim, []error) {
	cs, errs := make([]store.Claim, len(reqs)), make([]error, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Go(func() { cs[i], errs[i] = s.Begin(context.Background(), r) })
	}
	wg.Wait()
	return cs, errs
}
