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
	"testing"

	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/store"
)

// Allocation counts of the request path, per request: the gateway's own
// (everything but the store's calls and the upstream call, each measured
// apart and taken off) and the proxy's, next to httputil.ReverseProxy's.
// Counts, not times: they hold on a loaded machine.

// heapAllocs is the process's count of heap allocations so far.
func heapAllocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// allocStore is the real store, counting the allocations made inside its
// calls.
type allocStore struct {
	store.Store
	allocs uint64
}

func (s *allocStore) Begin(ctx context.Context, req store.ClaimRequest) (store.Claim, error) {
	before := heapAllocs()
	defer func() { s.allocs += heapAllocs() - before }()
	return s.Store.Begin(ctx, req)
}

func (s *allocStore) Finish(ctx context.Context, l *store.Lease, res store.Result) error {
	before := heapAllocs()
	defer func() { s.allocs += heapAllocs() - before }()
	return s.Store.Finish(ctx, l, res)
}

// allocExecutor is an executor counting the allocations made inside its
// upstream calls (the upstream server's included).
type allocExecutor struct {
	gateway.Executor
	allocs uint64
}

func (e *allocExecutor) Execute(ctx context.Context, in gateway.Invocation) gateway.Answer {
	before := heapAllocs()
	defer func() { e.allocs += heapAllocs() - before }()
	return e.Executor.Execute(ctx, in)
}

// discardWriter is a ResponseWriter that keeps the status and drops the
// body, reused across requests.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(code int)        { w.status = code }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }

// benchUpstream is the benchmarks' upstream: it reads the body and
// answers 201 with a small JSON body and a Location.
func benchUpstream(t testing.TB) *url.URL {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", "/v1/things/1")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"thing_id":"1","status":"created"}`)
	}))
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	return u
}

// ownAllocs returns the gateway's own allocations per request of send,
// runs times: the process's, less those inside the store's calls and the
// upstream calls.
func ownAllocs(t *testing.T, runs int, st *allocStore, ex *allocExecutor, send func(i int)) float64 {
	t.Helper()
	i := 0
	st.allocs, ex.allocs = 0, 0
	total := testing.AllocsPerRun(runs, func() { send(i); i++ })
	return total - float64(st.allocs+ex.allocs)/float64(runs+1) // AllocsPerRun runs once more to warm up
}

// TestTheGatewayAllocatesLittleOfItsOwnPerRequest: a first run and a
// replay through the gateway (the benchmarks' endpoint, client and
// upstream) allocate at most firstRunAllocs and replayAllocs objects of
// the gateway's own, the store's calls and the upstream call aside: the
// Go CPU per request the benchmarks measure is mostly what is allocated.
func TestTheGatewayAllocatesLittleOfItsOwnPerRequest(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop what it is given")
	}
	// Every claim, replays included, carries its body's member digests
	// (the 422's changed_members, issue 29 item 3). Taken from a tree
	// (encoding/json into any) they cost about 40 allocations and these
	// budgets were 90 and 75 (84.6 and 69.1 measured); taken from the
	// fingerprint's own canonical form they cost one, the encoded digests
	// (46.8 and 31.1 measured, 44.8 and 29.6 without digests at all).
	// Detached contexts that no longer box context.WithoutCancel's struct
	// on every lookup (exchange.Detach) took them to 42.7 and 29.1. The
	// recording's call as an Ender (retry.Share.Start) and the heartbeat
	// kept in the lease guard took the first run to 39.7 (2026-12-07,
	// session 11; docs/capacity.md, "Go allocations per first run").
	const firstRunAllocs, replayAllocs = 42, 30
	st := &allocStore{Store: openStore(t, 4)}
	ex := &allocExecutor{Executor: gateway.NewProxy(benchUpstream(t), nil)}
	g, err := gateway.New(gateway.Config{Region: "test", Worker: "w", Store: st, Auth: verifier(t),
		Endpoints: endpoints(t, benchEndpoint), Next: ex})
	if err != nil {
		t.Fatal(err)
	}
	auth := token(t, "bench")
	const runs = 200
	w := &discardWriter{h: http.Header{}}
	requests := func(prefix string, n, keys int) []*http.Request {
		rs := make([]*http.Request, n)
		for i := range rs {
			rs[i] = post(t, "http://gw/v1/things", auth, fmt.Sprintf("%s-%d", prefix, i%keys), `{"amount":"12.50","currency":"EUR"}`)
		}
		return rs
	}
	send := func(rs []*http.Request, want int) func(int) {
		return func(i int) {
			clear(w.h)
			g.ServeHTTP(w, rs[i])
			if w.status != want {
				t.Fatalf("status %d, want %d", w.status, want)
			}
		}
	}
	warm := requests("warm", 20, 20)
	for i := range warm {
		send(warm, http.StatusCreated)(i)
	}
	first := ownAllocs(t, runs, st, ex, send(requests("first", runs+1, runs+1), http.StatusCreated))
	replay := ownAllocs(t, runs, st, ex, send(requests("warm", runs+1, len(warm)), http.StatusCreated))
	t.Logf("the gateway's own allocations per request: first run %.1f, replay %.1f", first, replay)
	if first > firstRunAllocs || replay > replayAllocs {
		t.Errorf("the gateway's own allocations per request: first run %.1f (at most %d), replay %.1f (at most %d)",
			first, firstRunAllocs, replay, replayAllocs)
	}
}

// protocolAllocs is what an upstream call of the protocol allocates that a
// plain relay does not: the upstream timeout's context, the trace that
// tells whether the request was sent, the operation id and actor headers.
const protocolAllocs = 12

// TestTheProxyAllocatesAsAReverseProxyDoesPlusTheProtocol: one upstream
// call of gateway.Proxy (the request sent, the whole answer read for the
// record) allocates no more than httputil.ReverseProxy relaying the same
// request from the same upstream over the same transport settings (its
// ResponseWriter aside), plus protocolAllocs: one copy of the headers, no
// http.Client copies of them for redirects it never follows, one buffer
// for the answer.
func TestTheProxyAllocatesAsAReverseProxyDoesPlusTheProtocol(t *testing.T) {
	u := benchUpstream(t)
	eps := endpoints(t, benchEndpoint)
	const runs = 200
	const body = `{"amount":"12.50","currency":"EUR"}`
	requests := make([]*http.Request, runs+1)
	for i := range requests {
		requests[i] = post(t, "http://gw/v1/things", "Bearer x", "k", body)
	}
	p := gateway.NewProxy(u, nil)
	i := 0
	proxy := testing.AllocsPerRun(runs, func() {
		a := p.Execute(context.Background(), gateway.Invocation{Request: requests[i], Body: []byte(body),
			Actor: "t/bench", Endpoint: &eps[0]})
		i++
		if a.Status != http.StatusCreated {
			t.Fatalf("status %d (%v)", a.Status, a.Err)
		}
	})
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = gatewayTransport()
	w := &discardWriter{h: http.Header{}}
	for i := range requests {
		requests[i] = post(t, "http://gw/v1/things", "Bearer x", "k", body)
	}
	i = 0
	reverse := testing.AllocsPerRun(runs, func() {
		clear(w.h)
		rp.ServeHTTP(w, requests[i])
		i++
		if w.status != http.StatusCreated {
			t.Fatalf("status %d", w.status)
		}
	})
	t.Logf("allocations per upstream call: gateway.Proxy %.1f, httputil.ReverseProxy %.1f", proxy, reverse)
	if proxy > reverse+protocolAllocs {
		t.Errorf("gateway.Proxy allocates %.1f per upstream call, httputil.ReverseProxy %.1f (+%d at most)",
			proxy, reverse, protocolAllocs)
	}
}
