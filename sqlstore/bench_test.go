package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// Benchmarks run the coordinator and the raw SQL it replaces side by side in
// one run, with the same pool, the same number of workers and the same
// number of operations, alternating halves to cancel drift on a noisy
// machine, and report the ratio coordinator ops/s / raw ops/s.
//
//	go test ./sqlstore -run '^$' -bench . -benchtime 4000x
const benchWorkers = 16

// benchFiller is how many records the table holds before a benchmark.
const benchFiller = 100000

type benchEnv struct {
	s    *sqlstore.Store
	dsn  string
	seq  atomic.Int64
	base store.ClaimRequest
	rd   *sdkmetric.ManualReader
	// actor, when set, is the one actor of every request (one busy
	// tenant: one shard, one fence row, one stretch of the primary key).
	actor string
}

func newBenchEnv(b testing.TB, filler int) *benchEnv {
	dsn := pgtest.NewDatabase(b)
	rd := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(rd))
	s, err := sqlstore.Open(context.Background(), sqlstore.Config{Migrate: true, DSN: dsn, MaxConns: benchWorkers, Meter: mp.Meter("bench"),
		GroupCommit: benchGroupCommit(b)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	bootstrap(b, s)
	_, err = s.Pool().Exec(context.Background(), `
		CREATE TABLE payments (id UUID PRIMARY KEY, operation_id UUID NOT NULL UNIQUE, amount TEXT NOT NULL);`)
	if err != nil {
		b.Fatal(err)
	}
	// A production table holds a TTL's worth of keys. An empty one puts
	// every concurrent insert on the same few index pages, where
	// PostgreSQL's page-level predicate locks turn unrelated keys into
	// serialization failures.
	_, err = s.Pool().Exec(context.Background(), `
		INSERT INTO idempotency_records (actor_scope, endpoint, key_hash, operation_id, fingerprint,
			fingerprint_version, state, version, attempts, shard, epoch, created_at, updated_at, expires_at)
		SELECT 'tenant/a' || (i % 997), 'POST /v1/payments', sha256(i::text::bytea), gen_random_uuid(), '\x00', 1,
			'COMPLETED', 2, 1, 0, 1, now(), now(), now() + INTERVAL '1 day'
		FROM generate_series(1, $1::INT) AS g(i)`, filler)
	if err == nil {
		_, err = s.Pool().Exec(context.Background(), `ANALYZE`)
	}
	if err != nil {
		b.Fatal(err)
	}
	return &benchEnv{s: s, dsn: dsn, base: request(b, "tenant/bench", "k", `{"amount":"12.50","currency":"EUR"}`), rd: rd}
}

// req returns a claim request for a fresh key, spread over actors (and so
// over shards).
func (e *benchEnv) req(b testing.TB) store.ClaimRequest {
	n := e.seq.Add(1)
	r := e.base
	actor := fmt.Sprintf("tenant/a%d", n%997)
	if e.actor != "" {
		actor = e.actor
	}
	r.Scope.Actor = actor
	r.Scope.Key = mustKey(b, fmt.Sprintf("key-%d", n))
	r.Token.Shard = shardOf(actor)
	return r
}

// measure runs op total times over benchWorkers goroutines and returns ops/s
// and every latency.
func measure(b testing.TB, total int, op func() error) (float64, []time.Duration) {
	var next atomic.Int64
	lat := make([]time.Duration, total)
	var wg sync.WaitGroup
	start := time.Now()
	for range benchWorkers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= total {
					return
				}
				t := time.Now()
				if err := op(); err != nil {
					b.Error(err)
					return
				}
				lat[i] = time.Since(t)
			}
		})
	}
	wg.Wait()
	return float64(total) / time.Since(start).Seconds(), lat
}

// sideBySide alternates raw and coordinator halves and reports the ratio
// and the CPU per operation of each side, Go / PostgreSQL.
func sideBySide(b *testing.B, e *benchEnv, raw, coord func() error) {
	n := max(b.N, 2*benchWorkers)
	var rawRate, coordRate float64
	var rawCPU, coordCPU cpuMark
	b.ResetTimer()
	for range 2 {
		c0 := cpuNow(b, e)
		r, _ := measure(b, n/2, raw)
		c1 := cpuNow(b, e)
		c, _ := measure(b, n/2, coord)
		c2 := cpuNow(b, e)
		rawRate += r / 2
		coordRate += c / 2
		rawCPU.goCPU += c1.goCPU - c0.goCPU
		rawCPU.pgCPU += c1.pgCPU - c0.pgCPU
		coordCPU.goCPU += c2.goCPU - c1.goCPU
		coordCPU.pgCPU += c2.pgCPU - c1.pgCPU
	}
	b.StopTimer()
	b.ReportMetric(rawRate, "raw-ops/s")
	b.ReportMetric(coordRate, "coord-ops/s")
	b.ReportMetric(coordRate/rawRate, "ratio-vs-raw")
	// CPU per operation (see cpuNow): steadier than the rates on a
	// shared machine.
	ops := float64(n / 2 * 2)
	b.ReportMetric(float64(rawCPU.goCPU.Microseconds())/ops, "raw-go-µs/op")
	b.ReportMetric(float64(rawCPU.pgCPU.Microseconds())/ops, "raw-pg-µs/op")
	b.ReportMetric(float64(coordCPU.goCPU.Microseconds())/ops, "coord-go-µs/op")
	b.ReportMetric(float64(coordCPU.pgCPU.Microseconds())/ops, "coord-pg-µs/op")
	b.ReportMetric(float64(retries(b, e.rd))/float64(n), "coord-retries/op")
}

// rawRetry re-runs a raw single-statement transaction on 40001, as any
// correct client must at SERIALIZABLE.
func rawRetry(f func() error) error {
	for {
		err := f()
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "40001" {
			continue
		}
		return err
	}
}

// BenchmarkFirstRun: Begin + Finish against the same two statements (the
// claim and the fenced, version-conditioned finish) sent raw, each in its
// own serializable transaction, retried on 40001 as any correct client must.
func BenchmarkFirstRun(b *testing.B) {
	e := newBenchEnv(b, benchFiller)
	p := firstRunPair(b, e)
	sideBySide(b, e, p.raw, p.coord)
}

// BenchmarkFirstRunOneActor: BenchmarkFirstRun with every request from one
// actor. coord-retries/op shows serialization failures between first runs
// that share a fence row and primary-key pages (none with the insert-first
// claim; 0.05 to 0.13 per op with the read-first claim it replaced).
func BenchmarkFirstRunOneActor(b *testing.B) {
	e := newBenchEnv(b, benchFiller)
	e.actor = "tenant/busy"
	p := firstRunPair(b, e)
	sideBySide(b, e, p.raw, p.coord)
}

// pair is a raw baseline and the coordinator doing the same work.
type pair struct{ raw, coord func() error }

func firstRunPair(b testing.TB, e *benchEnv) pair {
	ctx := context.Background()
	body := []byte(`{"payment_id":"pay_1"}`)
	raw := rawFirstRun(b, e, e.s.Pool(), sqlstore.ClaimSQL, sqlstore.FinishSQL, uuid.New)
	coord := func() error {
		c, err := e.s.Begin(ctx, e.req(b))
		if err != nil {
			return err
		}
		if c.Outcome != store.FirstRun {
			return fmt.Errorf("outcome %v", c.Outcome)
		}
		return e.s.Finish(ctx, c.Lease, completed(string(body)))
	}
	return pair{raw, coord}
}

// rawFirstRun sends a first run's two statements (the claim and the
// finish, as given) raw on pool, each its own transaction, retried on
// 40001. newID makes the operation id.
func rawFirstRun(b testing.TB, e *benchEnv, pool *pgxpool.Pool, claimSQL, finishSQL string, newID func() uuid.UUID) func() error {
	ctx := context.Background()
	body := []byte(`{"payment_id":"pay_1"}`)
	headers := []byte(`{"Content-Type":["application/json"]}`)
	return func() error {
		r := e.req(b)
		h := r.Scope.Key.Hash()
		owner := "raw/" + uuid.NewString()
		var now time.Time
		var inserted bool
		err := rawRetry(func() error {
			// The store's own scan of a first run: the time and the flag
			// (the rest of the row is NULL; nil skips a column).
			dest := make([]any, 2+sqlstore.RecordColCount)
			dest[0], dest[1] = &now, &inserted
			return pool.QueryRow(ctx, claimSQL, nil, r.Scope.Actor, r.Scope.Endpoint, h[:], r.Token.Shard,
				r.Token.Epoch, pgtype.UUID{Bytes: newID(), Valid: true}, r.Fingerprint.Sum[:], r.Fingerprint.Version,
				"IN_PROGRESS", owner, int64(30000), int64(86400000), r.Token.Region, nil, int64(0), nil).Scan(dest...)
		})
		if err == nil && !inserted {
			err = fmt.Errorf("raw claim of a fresh key found a record")
		}
		if err != nil {
			return err
		}
		return rawRetry(func() error {
			var v int64
			var exp *time.Time
			var expires time.Time
			return pool.QueryRow(ctx, finishSQL, nil, r.Token.Shard, r.Token.Epoch, r.Scope.Actor,
				r.Scope.Endpoint, h[:], int64(1), owner, r.Token.Region, "COMPLETED", int32(201), headers, body,
				false, "pay_1", nil, int64(86400000)).Scan(&v, &exp, &expires)
		})
	}
}

// BenchmarkReplay: Begin on a completed key against a raw point select of
// the same row. After a few dozen retries the store reads first on this
// endpoint (see retryrate.go).
func BenchmarkReplay(b *testing.B) { benchReplay(b, false) }

// BenchmarkReplayClaimFirst: the same, pinned to the claim-first path (one
// claim statement per retry, fence lock included): what a retry costs while
// first runs dominate.
func BenchmarkReplayClaimFirst(b *testing.B) { benchReplay(b, true) }

func benchReplay(b *testing.B, claimFirst bool) {
	e := newBenchEnv(b, benchFiller)
	if claimFirst {
		e.s.PinClaimFirst()
	}
	p := replayPair(b, e)
	sideBySide(b, e, p.raw, p.coord)
}

func replayPair(b testing.TB, e *benchEnv) pair {
	ctx := context.Background()
	const keys = 512
	reqs := make([]store.ClaimRequest, keys)
	for i := range reqs {
		reqs[i] = e.req(b)
		c, err := e.s.Begin(ctx, reqs[i])
		if err != nil {
			b.Fatal(err)
		}
		if err := e.s.Finish(ctx, c.Lease, completed(`{"payment_id":"pay_1"}`)); err != nil {
			b.Fatal(err)
		}
	}
	var i atomic.Int64
	raw := func() error {
		r := reqs[i.Add(1)%keys]
		h := r.Scope.Key.Hash()
		var rec store.Record
		var st string
		return e.s.Pool().QueryRow(ctx, `SELECT `+sqlstore.RecordCols+` FROM idempotency_records
			WHERE actor_scope = $1 AND endpoint = $2 AND key_hash = $3`,
			r.Scope.Actor, r.Scope.Endpoint, h[:]).Scan(&rec.Scope.Actor, &rec.Scope.Endpoint, new([]byte),
			&rec.OperationID, new([]byte), new(int), &st, &rec.Version, new(string), new(*time.Time),
			new(int32), new(string), new(int32), new(int64), new(*int32), new([]byte), &rec.Snapshot.Body, new(bool),
			new(*string), new(*string), new(bool), new(time.Time), new(time.Time), new(time.Time), new(*time.Time),
			new(int64), new(bool), new([]byte))
	}
	coord := func() error {
		c, err := e.s.Begin(ctx, reqs[i.Add(1)%keys])
		if err == nil && c.Outcome != store.Replayed {
			err = fmt.Errorf("outcome %v", c.Outcome)
		}
		return err
	}
	return pair{raw, coord}
}

// BenchmarkLocalFirstRun: RunLocal (claim + business insert + COMPLETED in
// one transaction) against the raw business insert alone.
func BenchmarkLocalFirstRun(b *testing.B) {
	e := newBenchEnv(b, benchFiller)
	p := localPair(b, e)
	sideBySide(b, e, p.raw, p.coord)
}

func localPair(b testing.TB, e *benchEnv) pair {
	ctx := context.Background()
	raw := func() error {
		_, err := e.s.Pool().Exec(ctx, `INSERT INTO payments (id, operation_id, amount) VALUES ($1, $2, '12.50')`, uuid.New(), uuid.New())
		return err
	}
	coord := func() error {
		_, err := e.s.RunLocal(ctx, e.req(b), func(ctx context.Context, tx pgx.Tx, op uuid.UUID) (store.Snapshot, error) {
			id := uuid.New()
			_, err := tx.Exec(ctx, `INSERT INTO payments (id, operation_id, amount) VALUES ($1, $2, '12.50')`, id, op)
			return store.Snapshot{Status: 201, ResourceID: id.String(), Body: []byte(`{}`)}, err
		})
		return err
	}
	return pair{raw, coord}
}

// BenchmarkRacers: rounds of 50 goroutines running RunLocal on one fresh
// key each round. Reports p99 latency and serialization retries per round;
// exactly one racer per round must run the business write.
func BenchmarkRacers(b *testing.B) {
	e := newBenchEnv(b, benchFiller)
	ctx := context.Background()
	rounds := max(b.N/50, 4)
	var lat []time.Duration
	var mu sync.Mutex
	b.ResetTimer()
	for range rounds {
		req := e.req(b)
		var wins atomic.Int64
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				t := time.Now()
				c, err := e.s.RunLocal(ctx, req, func(ctx context.Context, tx pgx.Tx, op uuid.UUID) (store.Snapshot, error) {
					_, err := tx.Exec(ctx, `INSERT INTO payments (id, operation_id, amount) VALUES ($1, $2, '1')`, uuid.New(), op)
					return store.Snapshot{Status: 201}, err
				})
				if err != nil {
					b.Error(err)
					return
				}
				if c.Outcome == store.FirstRun {
					wins.Add(1)
				}
				mu.Lock()
				lat = append(lat, time.Since(t))
				mu.Unlock()
			})
		}
		wg.Wait()
		if wins.Load() != 1 {
			b.Fatalf("round had %d winners", wins.Load())
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(retries(b, e.rd))/float64(rounds), "retries/round")
}

func retries(b testing.TB, rd *sdkmetric.ManualReader) int64 {
	var rm metricdata.ResourceMetrics
	if err := rd.Collect(context.Background(), &rm); err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "idemcoord.tx_retries" {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				n += dp.Value
			}
		}
	}
	return n
}

// TestBenchmarkPairsRun runs each benchmark's raw baseline and coordinator
// side a few times on a small table, so a benchmark that no longer runs
// (a changed statement, a wrong argument count) fails the tests, not only
// the next benchmark run.
func TestBenchmarkPairsRun(t *testing.T) {
	for name, mk := range map[string]func(testing.TB, *benchEnv) pair{
		"first run": firstRunPair, "replay": replayPair, "local first run": localPair, "peer first run": peerPair,
	} {
		t.Run(name, func(t *testing.T) {
			e := newBenchEnv(t, 100)
			p := mk(t, e)
			for range 3 {
				if err := p.raw(); err != nil {
					t.Fatalf("raw: %v", err)
				}
				if err := p.coord(); err != nil {
					t.Fatalf("coordinator: %v", err)
				}
			}
		})
	}
}

// benchGroupCommit is the store's group commit in the benchmarks:
// DefaultGroupCommit, or IDEMCOORD_BENCH_GROUP_COMMIT="maxInFlight,maxBatch"
// to sweep it ("0,0" turns it off; no full-batch or grow slot, no queue
// wait, as the first sweeps ran), or
// "maxInFlight,maxBatch,fullBatchSlots,growSlots[,growQueue]" (with
// DefaultGroupCommit's MaxQueueWait).
func benchGroupCommit(b testing.TB) sqlstore.GroupCommit {
	v := os.Getenv("IDEMCOORD_BENCH_GROUP_COMMIT")
	if v == "" {
		return sqlstore.DefaultGroupCommit
	}
	var g sqlstore.GroupCommit
	fields := []*int{&g.MaxInFlight, &g.MaxBatch, &g.FullBatchSlots, &g.GrowSlots, &g.GrowQueue}
	parts := strings.Split(v, ",")
	if len(parts) != 2 && len(parts) != 4 && len(parts) != 5 {
		b.Fatalf("IDEMCOORD_BENCH_GROUP_COMMIT=%q: want maxInFlight,maxBatch or maxInFlight,maxBatch,fullBatchSlots,growSlots[,growQueue]", v)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			b.Fatalf("IDEMCOORD_BENCH_GROUP_COMMIT=%q: field %d: %v", v, i+1, err)
		}
		*fields[i] = n
	}
	if len(parts) > 2 {
		g.MaxQueueWait = sqlstore.DefaultGroupCommit.MaxQueueWait
	}
	if g.MaxBatch <= 1 {
		return sqlstore.GroupCommitOff // the zero GroupCommit would be the default
	}
	return g
}
