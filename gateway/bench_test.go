package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/sqlstore"
)

// The gateway's overhead, measured against a plain httputil.ReverseProxy
// in front of the same upstream, side by side in one run with the same
// client, the same concurrency and the same number of requests:
//
//	go test ./gateway -run '^$' -bench . -benchtime 4000x
const benchClients = 16

// benchEndpoint configures the benchmarked endpoint like a payment: with a
// resolve path, so a first run costs the claim and the finish and no
// recovery-point write (see gateway/run.go).
const benchEndpoint = "    resolve_path: /internal/operations/{operation_id}\n"

func benchSetup(b *testing.B, dbUpstream bool) (gatewayURL, proxyURL string, st *sqlstore.Store) {
	var write func() error
	if dbUpstream {
		// An upstream that does what a payments API does at least: one
		// committed insert per request, in its own database.
		up := openStore(b, benchClients)
		if _, err := up.Pool().Exec(context.Background(), `CREATE TABLE things (id UUID PRIMARY KEY, body TEXT)`); err != nil {
			b.Fatal(err)
		}
		write = func() error {
			_, err := up.Pool().Exec(context.Background(), `INSERT INTO things (id, body) VALUES (gen_random_uuid(), 'x')`)
			return err
		}
	}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if write != nil {
			if err := write(); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", "/v1/things/1")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"thing_id":"1","status":"created"}`)
	}))
	b.Cleanup(upstream.Close)
	u, _ := url.Parse(upstream.URL)
	// The baseline proxy gets the gateway's own transport (NewProxy's
	// default: 256 idle connections per host). Go's default keeps 2, so
	// with 16 clients most baseline requests would open a connection to
	// the upstream and the ratio would flatter the gateway.
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = gatewayTransport()
	plain := httptest.NewServer(rp)
	b.Cleanup(plain.Close)
	st = openStore(b, benchClients)
	g, err := gateway.New(gateway.Config{Region: "test", Worker: "w", Store: st, Auth: verifier(b),
		Endpoints: endpoints(b, benchEndpoint), Next: gateway.NewProxy(u, nil)})
	if err != nil {
		b.Fatal(err)
	}
	startGateway(b, g)
	b.Cleanup(func() { g.Close() })
	gw := httptest.NewServer(g)
	b.Cleanup(func() { gw.Close() })
	return gw.URL, plain.URL, st
}

// drive sends total requests over benchClients connections; key(i) names
// the key of request i. It returns requests per second.
func drive(b *testing.B, client *http.Client, target, auth string, total int, key func(int) string) float64 {
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range benchClients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= total {
					return
				}
				resp, err := client.Do(post(b, target+"/v1/things", auth, key(i), `{"amount":"12.50","currency":"EUR"}`))
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					b.Errorf("status %d", resp.StatusCode)
					return
				}
			}
		})
	}
	wg.Wait()
	return float64(total) / time.Since(start).Seconds()
}

func benchGateway(b *testing.B, replay, dbUpstream bool) {
	gw, plain, st := benchSetup(b, dbUpstream)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchClients}}
	auth := token(b, "bench")
	n := max(b.N, 16*benchClients)
	var seq atomic.Int64
	fresh := func(int) string { return fmt.Sprintf("k-%d", seq.Add(1)) }
	key := fresh
	if replay {
		const keys = 256
		for i := range keys {
			drive(b, client, gw, auth, 1, func(int) string { return fmt.Sprintf("r-%d", i) })
		}
		key = func(i int) string { return fmt.Sprintf("r-%d", i%keys) }
	}
	var gwRate, plainRate float64
	var gwAllocs, plainAllocs uint64
	var gwGo, gwPG, plainGo time.Duration
	b.ResetTimer()
	// Alternate short rounds: on a shared machine the load of other
	// processes drifts within seconds, and both sides must see the same.
	const rounds = 8
	per := n / (2 * rounds)
	for range rounds {
		before, cpu0 := mallocs(), sampleCPU(st.Pool())
		plainRate += drive(b, client, plain, auth, per, fresh) / rounds
		mid, cpu1 := mallocs(), sampleCPU(st.Pool())
		gwRate += drive(b, client, gw, auth, per, key) / rounds
		after, cpu2 := mallocs(), sampleCPU(st.Pool())
		plainAllocs, gwAllocs = plainAllocs+mid-before, gwAllocs+after-mid
		goCPU, _ := cpu1.since(cpu0)
		plainGo += goCPU
		goCPU, pg := cpu2.since(cpu1)
		gwGo, gwPG = gwGo+goCPU, gwPG+pg
	}
	b.StopTimer()
	b.ReportMetric(plainRate, "proxy-req/s")
	b.ReportMetric(gwRate, "gateway-req/s")
	b.ReportMetric(gwRate/plainRate, "ratio-vs-proxy")
	// Go allocations of the whole process (client, proxy or gateway with
	// its store client, upstream) per request of each side: the
	// difference is the gateway's own, its store client's included.
	b.ReportMetric(float64(plainAllocs)/float64(rounds*per), "proxy-allocs/req")
	b.ReportMetric(float64(gwAllocs)/float64(rounds*per), "gateway-allocs/req")
	// CPU per request of each side: this process's (Go), and for the
	// gateway also its store's PostgreSQL backends' (where /proc shows
	// them).
	b.ReportMetric(float64(plainGo.Microseconds())/float64(rounds*per), "proxy-go-us/req")
	b.ReportMetric(float64(gwGo.Microseconds())/float64(rounds*per), "gateway-go-us/req")
	b.ReportMetric(float64(gwPG.Microseconds())/float64(rounds*per), "gateway-pg-us/req")
}

// BenchmarkGatewayFirstRun: every request a new key (claim, upstream call,
// finish) against the plain proxy.
func BenchmarkGatewayFirstRun(b *testing.B) { benchGateway(b, false, false) }

// BenchmarkGatewayFirstRunDBUpstream: the same against an upstream that
// commits one insert per request, closer to a real payments API.
func BenchmarkGatewayFirstRunDBUpstream(b *testing.B) { benchGateway(b, false, true) }

// BenchmarkGatewayReplay: every request a retry of a finished key (one
// store read, no upstream call) against the plain proxy.
func BenchmarkGatewayReplay(b *testing.B) { benchGateway(b, true, false) }

// mallocs is the process's count of heap allocations so far.
func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// gatewayTransport is the transport gateway.NewProxy builds when given nil.
func gatewayTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 256
	return t
}

// TestGatewayBenchmarksRun runs the gateway's benchmarks once each, small,
// so the side-by-side harness and every metric it reports keep working
// (the figures themselves are read from the full runs, docs/capacity.md).
func TestGatewayBenchmarksRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the benchmarks")
	}
	for name, bench := range map[string]func(*testing.B){
		"FirstRun": BenchmarkGatewayFirstRun, "FirstRunDBUpstream": BenchmarkGatewayFirstRunDBUpstream,
		"Replay": BenchmarkGatewayReplay,
	} {
		r := testing.Benchmark(bench)
		if r.N == 0 {
			t.Fatalf("%s did not run (see its log)", name)
		}
		for _, m := range []string{"ratio-vs-proxy", "proxy-req/s", "gateway-req/s", "gateway-allocs/req", "gateway-go-us/req"} {
			if r.Extra[m] <= 0 {
				t.Errorf("%s reports %s = %v", name, m, r.Extra[m])
			}
		}
		t.Logf("%s: %s", name, r)
	}
}
