package sqlstore_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// The peer baseline: the shape of a typical single-region idempotency
// layer (eben-vranken/idempo's PostgreSQL store is one): one table keyed by
// the key alone, a claim that is an upsert taking over an expired row, a
// finish that is a plain UPDATE, both at READ COMMITTED, no fence, no
// version check, no serializable arbitration. It is what idemcoord's first
// run is compared with: the same two round trips and commits, less work
// per statement.
const peerSchema = `
CREATE TABLE peer_idempotency_keys (
	key           TEXT        PRIMARY KEY,
	request_hash  BYTEA       NOT NULL,
	status        TEXT        NOT NULL,
	response_code INT4,
	response_body BYTEA,
	locked_until  TIMESTAMPTZ,
	expires_at    TIMESTAMPTZ NOT NULL,
	created_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX peer_idempotency_keys_expiry ON peer_idempotency_keys (expires_at);`

// peerClaimSQL inserts the key, or takes over a row whose TTL passed;
// xmax = 0 tells a fresh insert from a takeover.
const peerClaimSQL = `INSERT INTO peer_idempotency_keys (key, request_hash, status, locked_until, expires_at)
VALUES ($1, $2, 'processing', now() + INTERVAL '30 seconds', now() + INTERVAL '1 day')
ON CONFLICT (key) DO UPDATE SET request_hash = EXCLUDED.request_hash, status = 'processing',
	locked_until = EXCLUDED.locked_until, expires_at = EXCLUDED.expires_at, response_code = NULL, response_body = NULL
WHERE peer_idempotency_keys.expires_at < now()
RETURNING (xmax = 0) AS inserted`

const peerFinishSQL = `UPDATE peer_idempotency_keys SET status = 'completed', response_code = $2, response_body = $3,
	locked_until = NULL WHERE key = $1`

// peerPair is the peer's first run against the coordinator's (Begin +
// Finish), on one PostgreSQL: the peer on its own READ COMMITTED pool of
// the same size.
func peerPair(b testing.TB, e *benchEnv) pair {
	ctx := context.Background()
	pool := readCommittedPool(b, e)
	if _, err := pool.Exec(ctx, peerSchema); err != nil {
		b.Fatal(err)
	}
	return pair{raw: peerFirstRun(e, pool), coord: firstRunPair(b, e).coord}
}

// peerFirstRun is the peer's first run on pool: the upsert claim of a
// fresh key, then the finish.
func peerFirstRun(e *benchEnv, pool *pgxpool.Pool) func() error {
	ctx := context.Background()
	body := []byte(`{"payment_id":"pay_1"}`)
	fp := sha256.Sum256([]byte(`{"amount":"12.50","currency":"EUR"}`))
	return func() error {
		n := e.seq.Add(1)
		key := fmt.Sprintf("tenant/a%d:key-%d", n%997, n)
		var inserted bool
		err := rawRetry(func() error { return pool.QueryRow(ctx, peerClaimSQL, key, fp[:]).Scan(&inserted) })
		if err != nil {
			return err
		}
		if !inserted {
			return fmt.Errorf("peer claim of a fresh key %s took nothing", key)
		}
		return rawRetry(func() error {
			_, err := pool.Exec(ctx, peerFinishSQL, key, int32(201), body)
			return err
		})
	}
}

// readCommittedPool is a pool of benchWorkers connections on e's database
// at READ COMMITTED, PostgreSQL's default, with generic plans.
func readCommittedPool(b testing.TB, e *benchEnv) *pgxpool.Pool {
	pc, err := pgxpool.ParseConfig(e.dsn)
	if err != nil {
		b.Fatal(err)
	}
	pc.MaxConns = benchWorkers
	pc.ConnConfig.RuntimeParams["default_transaction_isolation"] = "read committed"
	// Generic plans, as the store's own pool uses (see sqlstore.Open): the
	// comparison is of the statements' execution, not of their planning.
	pc.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return pool
}

// BenchmarkFirstRunVsPeer: the coordinator's first run (Begin + Finish)
// against the peer baseline's (upsert claim + UPDATE finish at READ
// COMMITTED), interleaved, 16 clients. ratio-vs-raw is coordinator / peer.
//
//	go test ./sqlstore -run '^$' -bench FirstRunVsPeer -benchtime 8000x -count 3
//
// It also reports the CPU per first run of each side, split into Go (this
// process) and PostgreSQL (the database's processes; see cpuNow).
func BenchmarkFirstRunVsPeer(b *testing.B) {
	e := newBenchEnv(b, benchFiller)
	p := peerPair(b, e)
	n := max(b.N, 2*benchWorkers)
	var peerRate, coordRate float64
	var peerCPU, coordCPU cpuMark
	b.ResetTimer()
	for range 4 {
		c0 := cpuNow(b, e)
		r, _ := measure(b, n/4, p.raw)
		c1 := cpuNow(b, e)
		c, _ := measure(b, n/4, p.coord)
		c2 := cpuNow(b, e)
		peerRate += r / 4
		coordRate += c / 4
		peerCPU.add(c0, c1)
		coordCPU.add(c1, c2)
	}
	b.StopTimer()
	b.ReportMetric(peerRate, "peer-ops/s")
	b.ReportMetric(coordRate, "coord-ops/s")
	b.ReportMetric(coordRate/peerRate, "ratio-vs-peer")
	ops := float64(n / 4 * 4)
	b.ReportMetric(float64(peerCPU.goCPU.Microseconds())/ops, "peer-go-µs/op")
	b.ReportMetric(float64(peerCPU.pgCPU.Microseconds())/ops, "peer-pg-µs/op")
	b.ReportMetric(float64(coordCPU.goCPU.Microseconds())/ops, "coord-go-µs/op")
	b.ReportMetric(float64(coordCPU.pgCPU.Microseconds())/ops, "coord-pg-µs/op")
	// Heap allocations per first run: a count, steadier than the CPU
	// time on a shared machine (the client's own work included on both
	// sides: the coordinator's builds a ClaimRequest, the peer's a key).
	b.ReportMetric(float64(peerCPU.allocs)/ops, "peer-allocs/op")
	b.ReportMetric(float64(coordCPU.allocs)/ops, "coord-allocs/op")
	b.ReportMetric(float64(peerCPU.bytes)/ops, "peer-B/op")
	b.ReportMetric(float64(coordCPU.bytes)/ops, "coord-B/op")
	b.ReportMetric(float64(retries(b, e.rd))/float64(n), "coord-retries/op")
	reportBatches(b, e.rd, ops)
}

// reportBatches reports, per statement kind, the share of the
// coordinator's requests that went in a group-commit batch and the
// requests per batch statement (idemcoord.store_batch_size).
func reportBatches(b *testing.B, rd *sdkmetric.ManualReader, ops float64) {
	var rm metricdata.ResourceMetrics
	if err := rd.Collect(context.Background(), &rm); err != nil {
		b.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			h, ok := m.Data.(metricdata.Histogram[int64])
			if m.Name != "idemcoord.store_batch_size" || !ok {
				continue
			}
			for _, dp := range h.DataPoints {
				v, _ := dp.Attributes.Value("statement")
				if dp.Count > 0 {
					b.ReportMetric(float64(dp.Sum)/ops, v.AsString()+"s-batched/op")
					b.ReportMetric(float64(dp.Sum)/float64(dp.Count), v.AsString()+"s/batch")
				}
			}
		}
	}
}

// cpuMark is the CPU time used so far by this process (Go: the
// coordinator or the peer client, and the pool) and by the database's
// backends and background processes (PostgreSQL).
type cpuMark struct {
	goCPU, pgCPU time.Duration
	// allocs and bytes are this process's heap allocations so far
	// (runtime.MemStats.Mallocs, TotalAlloc).
	allocs, bytes uint64
}

// add adds what was used between from and to.
func (m *cpuMark) add(from, to cpuMark) {
	m.goCPU += to.goCPU - from.goCPU
	m.pgCPU += to.pgCPU - from.pgCPU
	m.allocs += to.allocs - from.allocs
	m.bytes += to.bytes - from.bytes
}

// cpuNow reads both, and this process's allocations. PostgreSQL's processes are those pg_stat_activity
// lists (every backend of both pools, and the background workers), read
// from /proc: the database must run on this machine, as the test's
// throwaway one does. Other clusters on the machine are not counted.
func cpuNow(b testing.TB, e *benchEnv) cpuMark {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := cpuMark{goCPU: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), allocs: ms.Mallocs, bytes: ms.TotalAlloc}
	rows, err := e.s.Pool().Query(context.Background(), `SELECT pid FROM pg_stat_activity`)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			b.Fatal(err)
		}
		m.pgCPU += procCPU(pid)
	}
	return m
}

// procCPU reads a process's utime+stime (clock ticks, 100 Hz) from /proc.
func procCPU(pid int) time.Duration {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}
