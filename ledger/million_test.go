package ledger_test

import (
	"context"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/ledger"
	"github.com/idemcoord/idemcoord/store"
)

// sampled is a store.Ledger whose scan samples the heap every `every`
// rows it hands out, keeping the largest HeapAlloc seen.
type sampled struct {
	store.Ledger
	every, rows int
	peak        uint64
}

func (s *sampled) ScanLedger(ctx context.Context, sc store.LedgerScan, fn func(store.LedgerRow) error) error {
	return s.Ledger.ScanLedger(ctx, sc, func(r store.LedgerRow) error {
		s.rows++
		if s.rows%s.every == 0 {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			s.peak = max(s.peak, m.HeapAlloc)
		}
		return fn(r)
	})
}

// TestAReportOfAMillionIntentsStreamsInBoundedMemory: a window of one
// million intents left in flight on a failed-over shard (rows made by
// generate_series in PostgreSQL) is reported in full, every row once,
// while the heap never grows by more than a few pages' worth: far less
// than the million entries would take if the report held them (each is
// several hundred bytes).
func TestAReportOfAMillionIntentsStreamsInBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("a million rows: not in -short")
	}
	const n = 1_000_000
	ctx := context.Background()
	s := openStore(t)
	start := time.Now()
	if _, err := s.Pool().Exec(ctx, `INSERT INTO idempotency_records (actor_scope, endpoint, key_hash, operation_id,
			fingerprint, fingerprint_version, state, version, lease_owner, lease_expires_at, attempts, last_stage, shard,
			epoch, created_at, updated_at, expires_at)
		SELECT 't/actor-' || (i % 5000), 'create-thing', sha256(i::TEXT::BYTEA), gen_random_uuid(), '\x01'::BYTEA, 1,
			'IN_PROGRESS', 1, 'east-w/x', now() - INTERVAL '1 hour', 1, '', 7, 1,
			now() - INTERVAL '2 hours', now() - INTERVAL '2 hours', now() + INTERVAL '1 day'
		FROM generate_series(1, $1) AS g(i)`, n); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d rows generated in %s", n, time.Since(start).Round(time.Second))
	if os.Getenv("LEDGER_EXPLAIN") != "" {
		var plan []string
		rows, _ := s.Pool().Query(ctx, `EXPLAIN ANALYZE SELECT actor_scope FROM idempotency_records r
			WHERE r.created_at < now() - INTERVAL '1 hour' AND r.shard = ANY('{7}')
			  AND (r.actor_scope, r.endpoint, r.key_hash) > ('t/actor-1', '', ''::BYTEA)
			ORDER BY r.actor_scope, r.endpoint, r.key_hash LIMIT 500`)
		for rows.Next() {
			var l string
			rows.Scan(&l)
			plan = append(plan, l)
		}
		rows.Close()
		t.Logf("plan:\n%s", strings.Join(plan, "\n"))
	}
	start = time.Now()
	from := time.Now().Add(-time.Hour)
	w := ledger.Window{From: from, To: time.Now(), Shards: []int{7},
		Moves: map[int]ledger.Move{7: {At: from, Shard: 7, FromEpoch: 1, ToEpoch: 2, To: "west"}}}

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	l := &sampled{Ledger: s, every: 10_000}
	sum, err := ledger.Report(ctx, l, w, ledger.Header{From: w.From, To: w.To}, ledger.Options{Format: ledger.FormatCSV}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if l.rows != n || sum.Count[ledger.InFlight] != n || sum.MustAct[ledger.InFlight] != n {
		t.Fatalf("reported %d rows, %d in flight (%d must act); want %d of each", l.rows, sum.Count[ledger.InFlight],
			sum.MustAct[ledger.InFlight], n)
	}
	growth := int64(l.peak) - int64(before.HeapAlloc)
	const bound = 64 << 20 // a few store pages and their garbage; a million entries would be >300 MiB
	t.Logf("reported in %s", time.Since(start).Round(time.Second))
	t.Logf("%d rows reported; heap before %d MiB, peak %d MiB, growth %d MiB (bound %d MiB)", l.rows,
		before.HeapAlloc>>20, l.peak>>20, growth>>20, bound>>20)
	if growth > bound {
		t.Errorf("the heap grew by %d MiB while reporting %d rows; want at most %d MiB: the report must stream", growth>>20, n, bound>>20)
	}
}
