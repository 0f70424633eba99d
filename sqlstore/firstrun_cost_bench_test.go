package sqlstore_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/sqlstore"
)

// costVariant is one way of doing a first run's two statements.
type costVariant struct {
	name string
	op   func() error
}

// firstRunCostVariants are the steps from the peer's first run to the
// coordinator's, each adding one cost: the peer's at SERIALIZABLE, the
// coordinator's statements at READ COMMITTED, then without the fence's row locks at SERIALIZABLE,
// then as they are, then through Begin and Finish (the Go side).
func firstRunCostVariants(b testing.TB, e *benchEnv) []costVariant {
	rc := readCommittedPool(b, e)
	noLock := func(q string) string { return strings.ReplaceAll(q, " FOR SHARE", "") }
	p := peerPair(b, e)
	// The same store with the expiry index on expires_at alone: its
	// primary-key columns buy PostgreSQL nothing (cleanup's state filter
	// reads the heap anyway) and make every insert's entry about 100 bytes.
	narrow := newBenchEnv(b, benchFiller)
	if _, err := narrow.s.Pool().Exec(context.Background(), `DROP INDEX idempotency_records_expiry;
		CREATE INDEX idempotency_records_expiry ON idempotency_records (expires_at)`); err != nil {
		b.Fatal(err)
	}
	v7 := func() uuid.UUID { return uuid.Must(uuid.NewV7()) }
	// The claim's INSERT alone, without the CTE and the fallback read of
	// an existing record: what the statement's shape costs.
	insertOnly := sqlstore.ClaimSQL[strings.Index(sqlstore.ClaimSQL, "INSERT"):strings.Index(sqlstore.ClaimSQL, "\n)\nSELECT")]
	insertOnly = strings.Replace(insertOnly, "RETURNING 1", "RETURNING COALESCE($1::TIMESTAMPTZ, now()), true"+
		strings.Repeat(", NULL", sqlstore.RecordColCount), 1)
	return []costVariant{
		{"peer upsert+update, read committed", p.raw},
		{"peer upsert+update, serializable", peerFirstRun(e, e.s.Pool())},
		{"coordinator SQL raw, read committed", rawFirstRun(b, e, rc, sqlstore.ClaimSQL, sqlstore.FinishSQL, uuid.New)},
		{"coordinator SQL raw, serializable, no fence lock", rawFirstRun(b, e, e.s.Pool(), noLock(sqlstore.ClaimSQL), noLock(sqlstore.FinishSQL), uuid.New)},
		{"coordinator SQL raw, serializable", rawFirstRun(b, e, e.s.Pool(), sqlstore.ClaimSQL, sqlstore.FinishSQL, uuid.New)},
		{"  ... with time-ordered (v7) operation ids", rawFirstRun(b, e, e.s.Pool(), sqlstore.ClaimSQL, sqlstore.FinishSQL, v7)},
		{"  ... with the claim's INSERT alone (no CTE, no fallback read)", rawFirstRun(b, e, e.s.Pool(), insertOnly, sqlstore.FinishSQL, uuid.New)},
		{"  ... with the expiry index on expires_at only", rawFirstRun(b, narrow, narrow.s.Pool(), sqlstore.ClaimSQL, sqlstore.FinishSQL, uuid.New)},
		{"Begin + Finish", p.coord},
	}
}

// BenchmarkFirstRunCostSplit attributes the first run's cost: each variant
// of firstRunCostVariants in interleaved rounds, 16 clients, with its
// throughput relative to the peer's and its CPU per first run split Go /
// PostgreSQL. The variants without the fence lock, at READ COMMITTED, with
// v7 operation ids, with the INSERT alone or with a narrower expiry index
// are measurements only:
// the store runs none of them. (Each variant's PostgreSQL CPU counts every
// backend of the server, the narrow-index store's too: the other pools sit
// idle meanwhile.)
//
//	go test ./sqlstore -run '^$' -bench FirstRunCostSplit -benchtime 8000x
func BenchmarkFirstRunCostSplit(b *testing.B) {
	e := newBenchEnv(b, benchFiller)
	vs := firstRunCostVariants(b, e)
	rate := runVariants(b, e, vs)
	b.ReportMetric(rate[len(vs)-1]/rate[0], "ratio-vs-peer")
}

// runVariants measures every variant of vs in interleaved rounds, 16
// clients, prints each one's throughput relative to the first (the peer)
// and its CPU per operation split Go / PostgreSQL, and returns the
// throughputs.
func runVariants(b *testing.B, e *benchEnv, vs []costVariant) []float64 {
	n := max(b.N, 2*benchWorkers)
	const rounds = 4
	rate := make([]float64, len(vs))
	cpu := make([]cpuMark, len(vs))
	b.ResetTimer()
	for range rounds {
		for i, v := range vs {
			c0 := cpuNow(b, e)
			r, _ := measure(b, n/rounds, v.op)
			c1 := cpuNow(b, e)
			rate[i] += r / rounds
			cpu[i].goCPU += c1.goCPU - c0.goCPU
			cpu[i].pgCPU += c1.pgCPU - c0.pgCPU
		}
	}
	b.StopTimer()
	ops := float64(n / rounds * rounds)
	fmt.Fprintf(os.Stdout, "%-50s %9s %8s %10s %10s\n", "variant", "ops/s", "vs peer", "Go µs/op", "PG µs/op")
	for i, v := range vs {
		fmt.Fprintf(os.Stdout, "%-50s %9.0f %8.2f %10.0f %10.0f\n", v.name, rate[i], rate[i]/rate[0],
			float64(cpu[i].goCPU.Microseconds())/ops, float64(cpu[i].pgCPU.Microseconds())/ops)
	}
	return rate
}

// TestFirstRunCostVariantsRun runs every variant a few times, so a changed
// statement breaks the tests, not the next benchmark run.
func TestFirstRunCostVariantsRun(t *testing.T) {
	e := newBenchEnv(t, 100)
	for _, v := range firstRunCostVariants(t, e) {
		for range 3 {
			if err := v.op(); err != nil {
				t.Fatalf("%s: %v", v.name, err)
			}
		}
	}
}
