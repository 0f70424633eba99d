package sqlstore_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/store"
)

// Hot spots: one actor at the highest rate one shard takes, and many
// racers on one key.
//
//	go test ./sqlstore -run '^$' -bench 'HotActor|Racers64' -benchtime 8000x

// hotClients is how many of the benchWorkers clients send the hot load;
// the rest send traffic spread over other actors.
const hotClients = 12

// BenchmarkHotActor: 12 clients run first runs for one actor (one shard,
// one fence row, one stretch of the primary key) while 4 clients run
// first runs spread over other actors; then the same 4 beside 12 clients
// spread over other actors too. others-p99-ratio is the spread clients'
// p99 beside the hot actor over their p99 beside spread traffic of the
// same volume: about 1 when the hot shard is no global bottleneck.
func BenchmarkHotActor(b *testing.B) {
	r := hotActorRun(b, newBenchEnv(b, benchFiller), max(b.N, 4*benchWorkers))
	b.ReportMetric(r.hotRate, "hot-actor-ops/s")
	b.ReportMetric(r.hotP99, "hot-actor-p99-ms")
	b.ReportMetric(r.hotRetries, "hot-retries/op")
	b.ReportMetric(r.othersP99Hot, "others-p99-ms")
	b.ReportMetric(r.othersP99Hot/r.othersP99Spread, "others-p99-ratio")
}

type hotActorResult struct {
	hotRate, hotP99, hotRetries, othersP99Hot, othersP99Spread float64
}

func hotActorRun(tb testing.TB, e *benchEnv, total int) hotActorResult {
	ctx := context.Background()
	first := func(actor string) func() error {
		return func() error {
			r := e.req(tb)
			if actor != "" {
				r.Scope.Actor, r.Token.Shard = actor, shardOf(actor)
			}
			c, err := e.s.Begin(ctx, r)
			if err != nil {
				return err
			}
			return e.s.Finish(ctx, c.Lease, completed(`{}`))
		}
	}
	var res hotActorResult
	for _, hot := range []bool{true, false} {
		actor := ""
		if hot {
			actor = "tenant/hot"
		}
		r0 := retries(tb, e.rd)
		var wg sync.WaitGroup
		var hotLat, otherLat []time.Duration
		var hotRate float64
		wg.Go(func() { hotRate, hotLat = measureN(tb, hotClients, total*hotClients/benchWorkers, first(actor)) })
		wg.Go(func() {
			_, otherLat = measureN(tb, benchWorkers-hotClients, total*(benchWorkers-hotClients)/benchWorkers, first(""))
		})
		wg.Wait()
		if hot {
			res.hotRate, res.hotP99 = hotRate, p99ms(hotLat)
			res.hotRetries = float64(retries(tb, e.rd)-r0) / float64(len(hotLat)+len(otherLat))
			res.othersP99Hot = p99ms(otherLat)
		} else {
			res.othersP99Spread = p99ms(otherLat)
		}
	}
	return res
}

// BenchmarkRacers64: rounds of 64 clients sending Begin for one fresh key
// at once. One wins, runs nothing and finishes; every other gets 409 (in
// flight) and retries every 2 ms until the winner's answer replays.
// Reports rounds/s, p99 of one Begin, serialization retries per Begin and
// the p99 time a 409 client waits for its answer.
func BenchmarkRacers64(b *testing.B) {
	r := racersRun(b, newBenchEnv(b, benchFiller), max(b.N/64, 4))
	b.ReportMetric(r.roundsPerSec, "rounds/s")
	b.ReportMetric(r.beginP99, "begin-p99-ms")
	b.ReportMetric(r.retriesPerBegin, "retries/begin")
	b.ReportMetric(r.waitP99, "409-wait-p99-ms")
	b.ReportMetric(r.inFlightPerRound, "409s/round")
}

type racersResult struct {
	roundsPerSec, beginP99, retriesPerBegin, waitP99, inFlightPerRound float64
}

func racersRun(tb testing.TB, e *benchEnv, rounds int) racersResult {
	ctx := context.Background()
	const racers = 64
	var mu sync.Mutex
	var begins, waits []time.Duration
	var inFlight atomic.Int64
	r0 := retries(tb, e.rd)
	start := time.Now()
	for range rounds {
		req := e.req(tb)
		var wins atomic.Int64
		var wg sync.WaitGroup
		for range racers {
			wg.Go(func() {
				t0 := time.Now()
				waited := false
				for {
					t := time.Now()
					c, err := e.s.Begin(ctx, req)
					mu.Lock()
					begins = append(begins, time.Since(t))
					mu.Unlock()
					if err != nil {
						tb.Error(err)
						return
					}
					switch c.Outcome {
					case store.FirstRun:
						wins.Add(1)
						if err := e.s.Finish(ctx, c.Lease, completed(`{}`)); err != nil {
							tb.Error(err)
						}
						return
					case store.InFlight:
						inFlight.Add(1)
						waited = true
						time.Sleep(2 * time.Millisecond) // a client's retry interval, not a test wait
						continue
					case store.Replayed:
						if waited {
							mu.Lock()
							waits = append(waits, time.Since(t0))
							mu.Unlock()
						}
						return
					default:
						tb.Errorf("racer outcome %v", c.Outcome)
						return
					}
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 {
			tb.Fatalf("round had %d winners", wins.Load())
		}
	}
	el := time.Since(start)
	res := racersResult{roundsPerSec: float64(rounds) / el.Seconds(), beginP99: p99ms(begins),
		retriesPerBegin:  float64(retries(tb, e.rd)-r0) / float64(len(begins)),
		inFlightPerRound: float64(inFlight.Load()) / float64(rounds)}
	if len(waits) > 0 {
		res.waitP99 = p99ms(waits)
	}
	return res
}

// measureN is measure with n clients instead of benchWorkers.
func measureN(tb testing.TB, n, total int, op func() error) (float64, []time.Duration) {
	var next atomic.Int64
	lat := make([]time.Duration, total)
	var wg sync.WaitGroup
	start := time.Now()
	for range n {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= total {
					return
				}
				t := time.Now()
				if err := op(); err != nil {
					tb.Error(err)
					return
				}
				lat[i] = time.Since(t)
			}
		})
	}
	wg.Wait()
	return float64(total) / time.Since(start).Seconds(), lat
}

func p99ms(lat []time.Duration) float64 {
	if len(lat) == 0 {
		return 0
	}
	l := slices.Clone(lat)
	slices.Sort(l)
	return ms(l[len(l)*99/100])
}

// TestHotSpotBenchmarksRun runs the hot-spot benchmarks small: exactly one
// winner per racing round and every result present.
func TestHotSpotBenchmarksRun(t *testing.T) {
	e := newBenchEnv(t, 100)
	h := hotActorRun(t, e, 64)
	r := racersRun(t, e, 2)
	if h.hotRate == 0 || r.roundsPerSec == 0 {
		t.Fatalf("no result: %+v %+v", h, r)
	}
	t.Logf("hot actor %+v; racers %+v", h, r)
}
