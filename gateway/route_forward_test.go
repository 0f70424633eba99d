package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/internal/testutil"
)

func TestUnreachableOwnerRegionAnswers503AndNothingRuns(t *testing.T) {
	dead := "http://" + testutil.RefusingAddr(t)
	s := openStore(t, 8)
	east, west := startRegions(t, s, "east", regionsOptions{urlOf: func(viewer, name, real string) string {
		if viewer == "west" && name == "east" {
			return dead
		}
		return real
	}})
	st, h, b := do(t, post(t, west.url+"/v1/things", token(t, "alice"), "cut-off", routeBody))
	if st != http.StatusServiceUnavailable || h.Get("Retry-After") == "" || problemType(t, b) != "region-unreachable" {
		t.Errorf("got %s Retry-After=%q, want 503 region-unreachable with Retry-After", describe(st, h, b), h.Get("Retry-After"))
	}
	if west.upstream.Load()+east.received.Load() != 0 {
		t.Errorf("west's upstream ran %d, east received %d; want nothing run anywhere", west.upstream.Load(), east.received.Load())
	}
	assertNoRecord(t, s, "cut-off")
}

// connSeq is the context key of a connection's request counter.
type connSeq struct{}

func TestForwardNeverResendsAWrittenRequest(t *testing.T) {
	// A fake owner gateway that answers the first request of each
	// connection and drops the connection after reading any later one: a
	// forwarded request lost after it was written, on a reused connection,
	// which is exactly when Go's transport resends what it deems
	// replayable.
	var mu sync.Mutex
	seen := map[string]int{}
	owner := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		mu.Lock()
		seen[r.Header.Get("Idempotency-Key")]++
		mu.Unlock()
		if r.Context().Value(connSeq{}).(*atomic.Int64).Add(1) == 1 {
			w.Header().Set(gateway.HeaderRegion, "east")
			w.WriteHeader(http.StatusCreated)
			return
		}
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	owner.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, connSeq{}, new(atomic.Int64))
	}
	owner.Start()
	defer owner.Close()
	s := openStore(t, 8)
	_, west := startRegions(t, s, "east", regionsOptions{urlOf: func(viewer, name, real string) string {
		if viewer == "west" && name == "east" {
			return owner.URL
		}
		return real
	}})
	alice := token(t, "alice")
	lost := ""
	for i := range 5 { // the first warms a connection; a later one rides it
		key := fmt.Sprintf("lost-%d", i)
		st, h, b := do(t, post(t, west.url+"/v1/things", alice, key, routeBody))
		if st == http.StatusGatewayTimeout {
			if problemType(t, b) != "forward-answer-lost" || h.Get("Retry-After") == "" ||
				h.Get(gateway.HeaderKeyStatus) != gateway.KeyStatusInProgress {
				t.Errorf("lost answer: %s status %q, want 504 forward-answer-lost with Retry-After, in-progress (the owner may have run it)",
					describe(st, h, b), h.Get(gateway.HeaderKeyStatus))
			}
			lost = key
			break
		}
		if st != http.StatusCreated {
			t.Fatalf("request %d: %s, want 201 or 504", i, describe(st, h, b))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for key, n := range seen {
		if n != 1 {
			t.Errorf("owner received key %s %d times, want once: a forwarded request is never resent", key, n)
		}
	}
	if lost == "" && !t.Failed() {
		t.Fatal("no forwarded request rode a reused connection; the test proved nothing")
	}
	if west.upstream.Load() != 0 {
		t.Errorf("west ran the request locally %d times, want never", west.upstream.Load())
	}
}

// etcdBackedCache is a directory cache with the methods one backed by
// etcd has besides Owner; each counts as I/O if a request ever uses it.
type etcdBackedCache struct {
	*staticOwners
	io atomic.Int64
}

func (c *etcdBackedCache) Refresh(context.Context) error { c.io.Add(1); return nil }
func (c *etcdBackedCache) Lookup(_ context.Context, shard int) (string, int64, string, error) {
	c.io.Add(1)
	r, e, st, _ := c.staticOwners.Owner(shard)
	return r, e, st, nil
}
func (c *etcdBackedCache) Get(context.Context, string) ([]byte, error) { c.io.Add(1); return nil, nil }
func (c *etcdBackedCache) Ready(context.Context) error                 { c.io.Add(1); return nil }

func TestRequestsMakeNoDirectoryCallButACacheLookup(t *testing.T) {
	s := openStore(t, 8)
	caches := map[string]*etcdBackedCache{}
	east, west := startRegions(t, s, "east", regionsOptions{owners: func(name string, cache *staticOwners) gateway.Owners {
		caches[name] = &etcdBackedCache{staticOwners: cache}
		return caches[name]
	}})
	alice := token(t, "alice")
	// A first run and a replay, each landing in the owner and in the other
	// region: 1+2+1+2 gateway visits, one cache lookup each.
	for _, step := range []struct {
		via *regionGW
		key string
	}{{east, "a"}, {west, "b"}, {east, "b"}, {west, "a"}} {
		if st, h, b := do(t, post(t, step.via.url+"/v1/things", alice, step.key, routeBody)); st != http.StatusCreated {
			t.Fatalf("via %s key %s: %s", step.via.name, step.key, describe(st, h, b))
		}
	}
	for name, c := range caches {
		if got := c.io.Load(); got != 0 {
			t.Errorf("%s: %d directory calls other than a cache lookup, want 0", name, got)
		}
	}
	if e, w := east.owners.calls.Load(), west.owners.calls.Load(); e != 4 || w != 2 {
		t.Errorf("cache lookups: east %d, west %d; want 4 and 2 (one per gateway a request passes)", e, w)
	}
}
