package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/internal/toxitest"
)

// The cost of landing in the wrong region: the same request sent to the
// owner region's gateway, and to the other region's, which forwards it over
// a link with a fixed inter-region latency (a toxiproxy latency toxic of
// routeWANLatency on the forwarding hop's answers: one extra round trip of
// that length per request, the connection being reused). Side by side in
// one run, same store, same client, same concurrency:
//
//	go test ./gateway -run '^$' -bench 'Route' -benchtime 2000x
const (
	routeWANLatency = 20 * time.Millisecond
	// routeClients is one so that latency, not queueing on the 2-core
	// machine, is compared: with more clients the owner is less loaded on
	// the forwarded path (its requests arrive spaced by the WAN latency),
	// which would hide part of the forwarding cost.
	routeClients = 1
)

// benchRoute measures first runs (fresh keys) or replays (keys finished
// beforehand) landing in east (the owner) and in west (forwarded).
func benchRoute(b *testing.B, replay bool) {
	s := openStore(b, benchClients)
	east, west := startRegions(b, s, "east", regionsOptions{urlOf: func(viewer, name, real string) string {
		if viewer != "west" || name != "east" {
			return real
		}
		u, err := url.Parse(real)
		if err != nil {
			b.Fatal(err)
		}
		p := toxitest.Proxy(b, "wan", u.Host)
		doc := fmt.Sprintf(`{"name":"wan","type":"latency","stream":"downstream","attributes":{"latency":%d,"jitter":0}}`,
			routeWANLatency.Milliseconds())
		if _, err := p.Toxics.AddToxicJson(strings.NewReader(doc)); err != nil {
			b.Fatal(err)
		}
		return "http://" + p.Listen
	}})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: routeClients}}
	auth := token(b, "alice") // one actor: the shard east owns
	n := max(b.N, 8*routeClients)
	var seq atomic.Int64
	key := func(int) string { return fmt.Sprintf("k-%d", seq.Add(1)) }
	if replay {
		const keys = 64
		for i := range keys {
			routeDrive(b, client, east.url, auth, 1, func(int) string { return fmt.Sprintf("r-%d", i) })
		}
		key = func(i int) string { return fmt.Sprintf("r-%d", i%keys) }
	}
	routeDrive(b, client, west.url, auth, routeClients, key) // warm both paths' connections
	routeDrive(b, client, east.url, auth, routeClients, key)
	var direct, forwarded []time.Duration
	b.ResetTimer()
	for range 2 { // alternate halves to cancel drift
		direct = append(direct, routeDrive(b, client, east.url, auth, n/2, key)...)
		forwarded = append(forwarded, routeDrive(b, client, west.url, auth, n/2, key)...)
	}
	b.StopTimer()
	d, f := median(direct), median(forwarded)
	b.ReportMetric(ms(d), "direct-p50-ms")
	b.ReportMetric(ms(f), "forwarded-p50-ms")
	b.ReportMetric(ms(f)/ms(d), "ratio-forwarded/direct")
	b.ReportMetric(ms(f-d), "added-ms")
	b.ReportMetric(ms(f-d-routeWANLatency), "added-beyond-wan-ms") // the second gateway and the proxy
	b.ReportMetric(0, "ns/op")
}

// BenchmarkRouteFirstRun: a new key per request, direct vs forwarded.
func BenchmarkRouteFirstRun(b *testing.B) { benchRoute(b, false) }

// BenchmarkRouteReplay: a retry of a finished key, direct vs forwarded.
func BenchmarkRouteReplay(b *testing.B) { benchRoute(b, true) }

// routeDrive sends total requests over routeClients connections and
// returns each one's latency.
func routeDrive(b *testing.B, client *http.Client, target, auth string, total int, key func(int) string) []time.Duration {
	var next atomic.Int64
	var mu sync.Mutex
	lat := make([]time.Duration, 0, total)
	var wg sync.WaitGroup
	for range routeClients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= total {
					return
				}
				req := post(b, target+"/v1/things", auth, key(i), routeBody)
				start := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				d := time.Since(start)
				if resp.StatusCode != http.StatusCreated {
					b.Errorf("status %d from %s", resp.StatusCode, target)
					return
				}
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return lat
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
