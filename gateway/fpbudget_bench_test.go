package gateway_test

import (
	"context"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/idempotency"
)

// BenchmarkFingerprintBudget100Parallel1MiB fingerprints 100 different
// 1 MiB JSON arrays of numbers at once, as 100 clients sending at once
// would, each through the budget as coordinate does it, without a bound
// and with an 8 MiB budget. It reports the peak heap above the starting
// one (peak-heap-MiB, sampled, so indicative) and the most body bytes
// fingerprinted at once (inflight-MiB, exact: never above the budget).
func BenchmarkFingerprintBudget100Parallel1MiB(b *testing.B) {
	bodies := make([][]byte, 100)
	for i := range bodies {
		bodies[i] = numberArray(1<<20, uint64(i))
	}
	for _, bc := range []struct {
		name  string
		bytes int64
	}{{"unbounded", 1 << 40}, {"budget-8MiB", 8 << 20}} {
		b.Run(bc.name, func(b *testing.B) {
			budget := gateway.NewFingerprintBudget(bc.bytes, time.Hour, nil)
			runtime.GC()
			stop := samplePeakHeap()
			b.ReportAllocs()
			for b.Loop() {
				var wg sync.WaitGroup
				for _, body := range bodies {
					wg.Go(func() {
						release, err := budget.Acquire(context.Background(), int64(len(body)))
						if err != nil {
							b.Error(err)
							return
						}
						defer release()
						r := idempotency.Request{Method: "POST", Path: "/v1/batch", ContentType: "application/json", Body: body}
						if _, err := idempotency.ComputeFingerprint(r, idempotency.FingerprintOptions{}); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
			}
			b.ReportMetric(float64(stop())/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(budget.Peak())/(1<<20), "inflight-MiB")
		})
	}
}

// samplePeakHeap samples the heap every 100µs until the returned function
// is called, which returns the largest heap seen minus the heap at the
// start.
func samplePeakHeap() func() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(s); return s[0].Value.Uint64() }
	base := read()
	var peak uint64
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(100 * time.Microsecond)
		defer t.Stop()
		for {
			peak = max(peak, read())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-stopped
		if peak < base {
			return 0
		}
		return peak - base
	}
}

// numberArray returns a JSON array of decimal amounts just under size
// bytes, seeded by seed.
func numberArray(size int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 2))
	b := []byte{'['}
	for {
		n := strconv.AppendInt(nil, rng.Int64N(1_000_000), 10)
		n = append(n, '.')
		n = strconv.AppendInt(n, rng.Int64N(100), 10)
		if len(b)+len(n)+2 > size {
			break
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, n...)
	}
	return append(b, ']')
}
