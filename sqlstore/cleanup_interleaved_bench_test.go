package sqlstore_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/sqlstore"
)

// BenchmarkCleanupInterleaved: claim p99 with and without cleanup, in one
// run on one table. First runs arrive at IDEMCOORD_CLEANUP_RATE per second
// (default 200) with a 2 s TTL for IDEMCOORD_CLEANUP_SECONDS (default 60);
// the time is cut into windows of IDEMCOORD_CLEANUP_WINDOW_MS (default
// 5000) and the built-in loop's shape (every second, batches of 500 for up
// to half of it) runs in every other window only. A claim counts for the
// window it started in, so whatever load the shared machine adds in a
// minute falls on both sides alike. Prints the p99 of the claim (Begin)
// and of the whole first run (Begin + Finish) per side and their ratio.
//
//	IDEMCOORD_CLEANUP_RATE=400 IDEMCOORD_CLEANUP_SECONDS=300 \
//	    go test ./sqlstore -run '^$' -bench CleanupInterleaved -benchtime 1x
func BenchmarkCleanupInterleaved(b *testing.B) {
	l := cleanupLoad{rate: envInt(b, "IDEMCOORD_CLEANUP_RATE", 200),
		run: time.Duration(envInt(b, "IDEMCOORD_CLEANUP_SECONDS", 60)) * time.Second,
		ttl: 2 * time.Second, interval: time.Second, batch: sqlstore.DefaultCleanupBatch}
	window := time.Duration(envInt(b, "IDEMCOORD_CLEANUP_WINDOW_MS", 5000)) * time.Millisecond
	interleavedRun(b, l, window, os.Stdout)
}

// TestCleanupInterleavedRuns runs the interleaved benchmark for a second,
// so it cannot rot: every first run succeeds (a failed one fails the test)
// and the claims are measured. Which window each lands in depends on the
// machine's pace, so the test does not ask for both.
func TestCleanupInterleavedRuns(t *testing.T) {
	l := cleanupLoad{rate: 40, run: time.Second, ttl: 200 * time.Millisecond, interval: 50 * time.Millisecond, batch: 50}
	r := interleavedRun(t, l, 250*time.Millisecond, io.Discard)
	if r.claims[0]+r.claims[1] == 0 {
		t.Fatalf("no claim measured: %+v", r)
	}
}

// interleaved is one interleaved run's result; index 0 is without
// cleanup, 1 with.
type interleaved struct {
	claims             [2]int
	claimP99, firstP99 [2]float64
	deleted            int64
}

func interleavedRun(tb testing.TB, l cleanupLoad, window time.Duration, out io.Writer) interleaved {
	e := newBenchEnv(tb, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	// side is 1 in the windows where cleanup runs.
	side := func(t time.Time) int { return int(t.Sub(start)/window) % 2 }
	var deleted atomic.Int64
	var cleaner, wg sync.WaitGroup
	cleaner.Go(func() { cleanLoop(ctx, e, l, &deleted, func() bool { return side(time.Now()) == 1 }) })
	var mu sync.Mutex
	var claim, first [2][]time.Duration
	jobs := make(chan struct{}, l.rate)
	for range benchWorkers {
		wg.Go(func() {
			for range jobs {
				r := e.req(tb)
				r.Lease, r.TTL = l.ttl/2, l.ttl
				t0 := time.Now()
				c, err := e.s.Begin(context.Background(), r)
				t1 := time.Now()
				if err == nil {
					err = e.s.Finish(context.Background(), c.Lease, completed(`{"payment_id":"pay_1"}`))
				}
				if err != nil {
					tb.Error(err)
					continue
				}
				s := side(t0)
				mu.Lock()
				claim[s] = append(claim[s], t1.Sub(t0))
				first[s] = append(first[s], time.Since(t0))
				mu.Unlock()
			}
		})
	}
	tick := time.NewTicker(time.Second / time.Duration(l.rate))
	for time.Since(start) < l.run {
		<-tick.C
		select {
		case jobs <- struct{}{}:
		default: // the workers cannot keep up: the rate is not reached
		}
	}
	tick.Stop()
	close(jobs)
	wg.Wait()
	cancel()
	cleaner.Wait()
	var r interleaved
	for s := range 2 {
		r.claims[s], r.claimP99[s], r.firstP99[s] = len(claim[s]), p99ms(claim[s]), p99ms(first[s])
	}
	r.deleted = deleted.Load()
	fmt.Fprintf(out, "rate %d/s, TTL %s (+ lease %s), %s in alternating windows of %s; cleanup every %s, batches of %d\n",
		l.rate, l.ttl, l.ttl/2, l.run, window, l.interval, l.batch)
	fmt.Fprintf(out, "%-16s %8s %14s %16s\n", "side", "claims", "claim p99 ms", "first run p99 ms")
	for s, name := range []string{"without cleanup", "with cleanup"} {
		fmt.Fprintf(out, "%-16s %8d %14.2f %16.2f\n", name, r.claims[s], r.claimP99[s], r.firstP99[s])
	}
	fmt.Fprintf(out, "with/without: claim p99 %.2f, first run p99 %.2f; %d records deleted\n",
		r.claimP99[1]/r.claimP99[0], r.firstP99[1]/r.firstP99[0], r.deleted)
	return r
}
