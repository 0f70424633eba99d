package idempotency

import (
	"encoding/json"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"testing"
)

// numberArray returns a JSON array of decimal amounts just under size
// bytes, the shape of the body that issue 6 measured.
func numberArray(size int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
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

// BenchmarkFingerprint1MiBArray compares, on a 1 MiB JSON array of numbers,
// the v1 fingerprint (streaming), the tree-building reference it replaced,
// json.Unmarshal into an any and json.Valid of the same body. The
// x-unmarshal metric is the variant's time over json.Unmarshal's, x-valid
// over json.Valid's; the streaming one also reports its speed-up over the
// reference (reference/streaming).
func BenchmarkFingerprint1MiBArray(b *testing.B) {
	body := numberArray(1 << 20)
	r := Request{Method: "POST", Path: "/v1/batch", ContentType: "application/json", Body: body}
	perOp := map[string]float64{}
	run := func(name string, f func(b *testing.B)) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				f(b)
			}
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			perOp[name] = ns
			if u := perOp["unmarshal"]; u > 0 && name != "unmarshal" {
				b.ReportMetric(ns/u, "x-unmarshal")
			}
			if v := perOp["valid"]; v > 0 && name != "valid" {
				b.ReportMetric(ns/v, "x-valid")
			}
			if ref := perOp["reference"]; ref > 0 && name == "streaming" {
				b.ReportMetric(ref/ns, "reference/streaming")
			}
		})
	}
	run("unmarshal", func(b *testing.B) {
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			b.Fatal(err)
		}
	})
	run("valid", func(b *testing.B) {
		if !json.Valid(body) {
			b.Fatal("invalid")
		}
	})
	run("reference", func(b *testing.B) {
		if _, err := refComputeFingerprint(r, FingerprintOptions{}); err != nil {
			b.Fatal(err)
		}
	})
	run("streaming", func(b *testing.B) {
		if _, err := ComputeFingerprint(r, FingerprintOptions{}); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkFingerprint100Parallel1MiB fingerprints 100 different 1 MiB
// bodies at once, unbounded, and reports the bytes allocated per body
// (alloc-MiB/body): what the gateway's fingerprint budget multiplies by the
// bodies it lets in at once.
func BenchmarkFingerprint100Parallel1MiB(b *testing.B) {
	for _, impl := range []struct {
		name string
		fp   func(Request, FingerprintOptions) (Fingerprint, error)
	}{{"reference", refComputeFingerprint}, {"streaming", ComputeFingerprint}} {
		b.Run(impl.name, func(b *testing.B) {
			body := numberArray(1 << 20)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				var wg sync.WaitGroup
				for range 100 {
					wg.Go(func() {
						r := Request{Method: "POST", Path: "/v1/batch", ContentType: "application/json", Body: body}
						if _, err := impl.fp(r, FingerprintOptions{}); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
			}
			runtime.ReadMemStats(&after)
			perBody := float64(after.TotalAlloc-before.TotalAlloc) / float64(b.N*100)
			b.ReportMetric(perBody/(1<<20), "alloc-MiB/body")
		})
	}
}
