package sqlstore_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/sqlstore"
)

// tierBytes are the bytes per record of one tier, measured on a table
// rewritten by VACUUM FULL (so both tiers are as densely packed as a
// freshly built table).
type tierBytes struct {
	row, heap, indexes, total float64 // average row (pg_column_size), heap, indexes, table + indexes
}

// BenchmarkRecordBytesPerTier: the bytes a record takes with its full
// answer and as a dedup marker (two-tier retention). It loads
// IDEMCOORD_TIER_RECORDS records (default 200000) shaped like traffic
// (loadGrowth: 120-byte bodies), gives every one a marker tier, measures,
// moves the store's clock past every full-answer tier, compacts them with
// the built-in cleanup (batches of 5000), and measures again. Run with
// -benchtime 1x:
//
//	IDEMCOORD_TIER_RECORDS=1000000 go test ./sqlstore -run '^$' -bench RecordBytesPerTier -benchtime 1x
func BenchmarkRecordBytesPerTier(b *testing.B) {
	tierBytesRun(b, envInt(b, "IDEMCOORD_TIER_RECORDS", 200000), os.Stderr, os.Stdout)
}

// TestRecordBytesPerTierRuns runs the benchmark small, so it cannot rot,
// and checks the one thing it must show: a marker is smaller than the
// record it replaces.
func TestRecordBytesPerTierRuns(t *testing.T) {
	full, marker := tierBytesRun(t, 1000, io.Discard, io.Discard)
	if marker.row >= full.row || marker.total >= full.total {
		t.Fatalf("marker %+v, full record %+v: want the marker smaller", marker, full)
	}
}

func tierBytesRun(tb testing.TB, n int, progress, out io.Writer) (full, marker tierBytes) {
	ctx := context.Background()
	clock := newClock()
	clock.Advance(time.Since(clock.Now())) // the loader's records are created up to now
	s, err := sqlstore.Open(ctx, sqlstore.Config{Migrate: true, DSN: pgtest.NewDatabase(tb), MaxConns: 4, DBClock: clock})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	bootstrap(tb, s)
	base := request(tb, "tenant/g0", "k", `{"amount":"12.50","currency":"EUR"}`)
	loadGrowth(tb, s, n, base.Fingerprint.Sum[:], base.Fingerprint.Version, progress)
	exec := func(q string) {
		if _, err := s.Pool().Exec(ctx, q); err != nil {
			tb.Fatalf("%s: %v", q, err)
		}
	}
	// Every record's full-answer tier ends now, its marker 28 days later.
	const marker28d = 28 * 24 * 3600 * 1000
	exec(fmt.Sprintf(`UPDATE idempotency_records SET marker_ttl_ms = %d, expires_at = now()`, marker28d))
	exec(`VACUUM FULL ANALYZE idempotency_records`)
	full = measureTier(tb, s, false)

	clock.Advance(time.Since(clock.Now()) + time.Minute)
	var wal0, wal1 string
	s.Pool().QueryRow(ctx, `SELECT pg_current_wal_lsn()::TEXT`).Scan(&wal0)
	start, compacted := time.Now(), 0
	for {
		c, err := s.Cleanup(ctx, 5000)
		if err != nil {
			tb.Fatal(err)
		}
		compacted += c
		if c < 5000 {
			break
		}
	}
	took := time.Since(start)
	var walBytes int64
	s.Pool().QueryRow(ctx, `SELECT pg_current_wal_lsn()::TEXT`).Scan(&wal1)
	s.Pool().QueryRow(ctx, `SELECT pg_wal_lsn_diff($1::TEXT::pg_lsn, $2::TEXT::pg_lsn)::INT8`, wal1, wal0).Scan(&walBytes)
	exec(`VACUUM ANALYZE idempotency_records`)
	var inPlace int64
	s.Pool().QueryRow(ctx, `SELECT pg_total_relation_size('idempotency_records')`).Scan(&inPlace)
	exec(`VACUUM FULL ANALYZE idempotency_records`)
	marker = measureTier(tb, s, true)

	fmt.Fprintf(out, "%d records (%d compacted in %s: %.0f/s, %.0f B of WAL each)\n", n, compacted,
		took.Round(time.Millisecond), float64(compacted)/took.Seconds(), float64(walBytes)/float64(max(compacted, 1)))
	fmt.Fprintf(out, "%-22s %8s %8s %10s %10s\n", "tier", "row B", "heap B", "indexes B", "total B")
	for _, r := range []struct {
		name string
		b    tierBytes
	}{{"full answer", full}, {"dedup marker", marker}} {
		fmt.Fprintf(out, "%-22s %8.0f %8.0f %10.0f %10.0f\n", r.name, r.b.row, r.b.heap, r.b.indexes, r.b.total)
	}
	fmt.Fprintf(out, "after compaction, before VACUUM FULL: %.0f B per record (the freed space is reused in place)\n",
		float64(inPlace)/float64(n))
	return full, marker
}

// measureTier reads the bytes per record of s's records table; the
// average row is over the records compacted (or not) as compacted says,
// the rest over all records.
func measureTier(tb testing.TB, s *sqlstore.Store, compacted bool) tierBytes {
	var heap, total, n int64
	var row float64
	err := s.Pool().QueryRow(context.Background(), `SELECT pg_table_size('idempotency_records'),
		pg_total_relation_size('idempotency_records'), (SELECT count(*) FROM idempotency_records),
		(SELECT COALESCE(avg(pg_column_size(r.*)), 0) FROM idempotency_records r WHERE r.compacted = $1)`,
		compacted).Scan(&heap, &total, &n, &row)
	if err != nil {
		tb.Fatal(err)
	}
	f := float64(n)
	return tierBytes{row: row, heap: float64(heap) / f, indexes: float64(total-heap) / f, total: float64(total) / f}
}
