package sqlstore_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/sqlstore"
)

// cleanupLoad is one run of the cleanup-under-load benchmark.
type cleanupLoad struct {
	rate     int           // first runs per second, paced
	run      time.Duration // how long each phase runs
	ttl      time.Duration // the records' TTL (after a lease of ttl/2)
	interval time.Duration // the cleanup loop's interval
	batch    int           // rows per cleanup statement
}

// BenchmarkCleanupUnderLoad: first runs at a steady rate with a short TTL,
// first without cleanup, then on a fresh table with the built-in cleanup
// loop's shape running (every interval, batches of batch rows until one
// comes back short or half the interval passed; see daemon/background.go). Prints the table's live rows, dead
// tuples and bytes over time, WAL bytes per first run and claim p99 of
// each phase, then how fast cleanup deletes a backlog flat out (the most
// first runs per second one cleanup loop keeps up with).
//
//	IDEMCOORD_CLEANUP_RATE=400 IDEMCOORD_CLEANUP_SECONDS=60 \
//	    go test ./sqlstore -run '^$' -bench CleanupUnderLoad -benchtime 1x
func BenchmarkCleanupUnderLoad(b *testing.B) {
	l := cleanupLoad{rate: envInt(b, "IDEMCOORD_CLEANUP_RATE", 200), run: time.Duration(envInt(b, "IDEMCOORD_CLEANUP_SECONDS", 30)) * time.Second,
		ttl: 2 * time.Second, interval: time.Second, batch: sqlstore.DefaultCleanupBatch}
	cleanupRun(b, l, os.Stdout)
}

func envInt(tb testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		tb.Fatalf("%s: %q is not a positive integer", name, v)
	}
	return n
}

type phaseResult struct {
	firstRuns         int
	retriesPerRun     float64 // serialization retries of the store's transactions per first run
	p99ms             float64
	walPerRun         float64
	deleted           int64
	liveEnd, deadEnd  int64
	bytesEnd, bytesHi int64
}

func cleanupRun(tb testing.TB, l cleanupLoad, out io.Writer) (without, with phaseResult, deletesPerSec float64) {
	fmt.Fprintf(out, "rate %d/s, TTL %s (+ lease %s), phase %s, cleanup every %s in batches of %d (for up to half of it)\n",
		l.rate, l.ttl, l.ttl/2, l.run, l.interval, l.batch)
	eA := newBenchEnv(tb, 0)
	without = cleanupPhase(tb, eA, l, false, out)
	eB := newBenchEnv(tb, 0)
	with = cleanupPhase(tb, eB, l, true, out)
	// The backlog phase A left, deleted flat out: the loop's capacity.
	var deleted int
	start := time.Now()
	for {
		n, err := eA.s.Cleanup(context.Background(), l.batch)
		if err != nil {
			tb.Fatal(err)
		}
		deleted += n
		if n < l.batch {
			break
		}
	}
	deletesPerSec = float64(deleted) / time.Since(start).Seconds()
	fmt.Fprintf(out, "%-16s %10s %8s %10s %10s %12s %10s %10s\n", "phase", "first runs", "p99 ms", "retries/run", "WAL B/run", "deleted", "live end", "dead end")
	for _, r := range []struct {
		name string
		p    phaseResult
	}{{"without cleanup", without}, {"with cleanup", with}} {
		fmt.Fprintf(out, "%-16s %10d %8.2f %10.3f %10.0f %12d %10d %10d\n", r.name, r.p.firstRuns, r.p.p99ms, r.p.retriesPerRun, r.p.walPerRun, r.p.deleted, r.p.liveEnd, r.p.deadEnd)
	}
	fmt.Fprintf(out, "claim p99 with/without cleanup: %.2f\n", with.p99ms/without.p99ms)
	fmt.Fprintf(out, "cleanup flat out: %d expired records in %.0f rows/s (batches of %d)\n", deleted, deletesPerSec, l.batch)
	return without, with, deletesPerSec
}

// cleanupPhase runs first runs at l.rate for l.run on e, with the cleanup
// loop when clean, sampling the table every second.
func cleanupPhase(tb testing.TB, e *benchEnv, l cleanupLoad, clean bool, out io.Writer) phaseResult {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var res phaseResult
	var deleted atomic.Int64
	var wg, cleaner sync.WaitGroup
	if clean {
		cleaner.Go(func() { cleanLoop(ctx, e, l, &deleted, func() bool { return true }) })
	}
	wal0, r0 := walLSN(tb, e), retries(tb, e.rd)
	jobs := make(chan struct{}, l.rate)
	var mu sync.Mutex
	var lat []time.Duration
	for range benchWorkers {
		wg.Go(func() {
			for range jobs {
				r := e.req(tb)
				r.Lease, r.TTL = l.ttl/2, l.ttl
				t := time.Now()
				c, err := e.s.Begin(context.Background(), r)
				if err == nil {
					err = e.s.Finish(context.Background(), c.Lease, completed(`{"payment_id":"pay_1"}`))
				}
				if err != nil {
					tb.Error(err)
				}
				mu.Lock()
				lat = append(lat, time.Since(t))
				mu.Unlock()
			}
		})
	}
	phase := "without cleanup"
	if clean {
		phase = "with cleanup"
	}
	fmt.Fprintf(out, "%-16s %6s %10s %10s %10s %10s\n", phase, "t s", "live rows", "dead rows", "bytes", "deleted")
	start := time.Now()
	tick := time.NewTicker(time.Second / time.Duration(l.rate))
	sample := time.NewTicker(time.Second)
	for time.Since(start) < l.run {
		select {
		case <-tick.C:
			select {
			case jobs <- struct{}{}:
			default: // the workers cannot keep up: the rate is not reached
			}
		case <-sample.C:
			live, dead, bytes := tableStats(tb, e)
			res.bytesHi = max(res.bytesHi, bytes)
			fmt.Fprintf(out, "%-16s %6.0f %10d %10d %10d %10d\n", "", time.Since(start).Seconds(), live, dead, bytes, deleted.Load())
		}
	}
	tick.Stop()
	sample.Stop()
	close(jobs)
	wg.Wait()
	cancel()
	cleaner.Wait()
	res.firstRuns = len(lat)
	res.p99ms = p99ms(lat)
	res.walPerRun = float64(walLSN(tb, e)-wal0) / float64(max(len(lat), 1))
	res.deleted = deleted.Load()
	res.retriesPerRun = float64(retries(tb, e.rd)-r0) / float64(max(len(lat), 1))
	res.liveEnd, res.deadEnd, res.bytesEnd = tableStats(tb, e)
	return res
}

// cleanLoop runs the built-in cleanup's pattern until ctx ends: every
// l.interval, passes of up to l.batch records for at most half the
// interval while on() holds, stopping early once a pass finds less than a
// batch; deleted counts what the passes removed.
func cleanLoop(ctx context.Context, e *benchEnv, l cleanupLoad, deleted *atomic.Int64, on func() bool) {
	t := time.NewTicker(l.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for start := time.Now(); on() && time.Since(start) < l.interval/2; {
			n, err := e.s.Cleanup(ctx, l.batch)
			deleted.Add(int64(n))
			if err != nil || n < l.batch {
				break
			}
		}
	}
}

// tableStats reads the records table's live and dead tuples (the
// statistics collector's estimate, as autovacuum sees them) and its size
// with indexes.
func tableStats(tb testing.TB, e *benchEnv) (live, dead, bytes int64) {
	err := e.s.Pool().QueryRow(context.Background(), `SELECT n_live_tup, n_dead_tup, pg_total_relation_size(relid)
		FROM pg_stat_user_tables WHERE relname = 'idempotency_records'`).Scan(&live, &dead, &bytes)
	if err != nil {
		tb.Fatal(err)
	}
	return live, dead, bytes
}

// walLSN is the server's WAL position in bytes (server-wide: the phases
// run one after the other).
func walLSN(tb testing.TB, e *benchEnv) int64 {
	var n int64
	if err := e.s.Pool().QueryRow(context.Background(), `SELECT pg_current_wal_lsn() - '0/0'::pg_lsn`).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

// TestCleanupUnderLoadRuns runs the cleanup benchmark for a second per
// phase: the phases, the samples and the flat-out cleanup keep working.
func TestCleanupUnderLoadRuns(t *testing.T) {
	l := cleanupLoad{rate: 40, run: time.Second, ttl: 2 * time.Second, interval: 200 * time.Millisecond, batch: 50}
	without, with, _ := cleanupRun(t, l, io.Discard)
	if without.firstRuns == 0 || with.firstRuns == 0 {
		t.Fatalf("no first runs: %+v %+v", without, with)
	}
}
