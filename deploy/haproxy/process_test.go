package haproxy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/internal/testutil"
)

// TestEntryStopsSendingToARegionThatGoesAwayAndTakesItBack: real haproxy
// in front of two small regions (HTTP servers answering /readyz and
// requests). One region's server closes; every request through the entry
// still gets the other region's answer (a refused connection is a
// conn-failure, retried elsewhere), and the admin socket shows the region
// down. Started again on its address, it comes back after two good
// checks.
func TestEntryStopsSendingToARegionThatGoesAwayAndTakesItBack(t *testing.T) {
	if _, err := Binary(); err != nil {
		t.Skip(err)
	}
	ok := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Idempotency-Region", name)
			w.Write([]byte("ok\n"))
		})
	}
	a, b := httptest.NewServer(ok("a")), httptest.NewServer(ok("b"))
	t.Cleanup(b.Close)
	aAddr := a.Listener.Addr().String()
	cfg := Config{Listen: "127.0.0.1:0", Regions: []Region{{Name: "a", Addr: aAddr}, {Name: "b", Addr: b.Listener.Addr().String()}}}
	e, err := Start(t.Context(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	waitStates(t, ctx, e, map[string]bool{"a": true, "b": true})

	a.Close()
	for i := 0; i < 20; i++ {
		res, err := http.Get(e.URL + "/v1/x")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Header.Get("X-Idempotency-Region") != "b" {
			t.Fatalf("request %d after region a closed: %d from %q; want 200 from b", i, res.StatusCode, res.Header.Get("X-Idempotency-Region"))
		}
	}
	waitStates(t, ctx, e, map[string]bool{"a": false, "b": true})

	ln, err := net.Listen("tcp", aAddr)
	if err != nil {
		t.Skipf("region a's port was taken meanwhile: %v", err)
	}
	back := &http.Server{Handler: ok("a")}
	go back.Serve(ln)
	t.Cleanup(func() { back.Close() })
	waitStates(t, ctx, e, map[string]bool{"a": true, "b": true})
}

// waitStates polls the admin socket until the regions' states are want
// (bounded by ctx).
func waitStates(t *testing.T, ctx context.Context, e *Entry, want map[string]bool) {
	t.Helper()
	for {
		got, err := e.Up(ctx)
		if err == nil && len(got) == len(want) {
			same := true
			for k, v := range want {
				same = same && got[k] == v
			}
			if same {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("entry states %v (%v); want %v", got, err, want)
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// TestEntrySendsAKeyedRequestElsewhereWhenItsRegionGoesSilent: real
// haproxy in front of a region that reads requests and never answers (a
// paused idemd keeps its connections) and a live one. A request with an
// Idempotency-Key is sent again, to the live region, once the server
// timeout strikes, and gets its answer; a request without a key is never
// sent twice: its client gets the 504 problem.
func TestEntrySendsAKeyedRequestElsewhereWhenItsRegionGoesSilent(t *testing.T) {
	if _, err := Binary(); err != nil {
		t.Skip(err)
	}
	var silentReads, liveReads atomic.Int32
	release := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			return // healthy to the checks: only requests hang
		}
		silentReads.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			return
		}
		liveReads.Add(1)
		w.Header().Set("X-Idempotency-Region", "live")
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(live.Close)
	t.Cleanup(silent.Close)
	t.Cleanup(func() { close(release) })
	cfg := Config{Listen: "127.0.0.1:0", ServerTimeout: 300 * time.Millisecond,
		Regions: []Region{{Name: "silent", Addr: silent.Listener.Addr().String()}, {Name: "live", Addr: live.Listener.Addr().String()}}}
	e, err := Start(t.Context(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	waitStates(t, ctx, e, map[string]bool{"silent": true, "live": true})

	post := func(key string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.URL+"/v1/payments", strings.NewReader(`{"amount":1}`))
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	// Round robin: of any two requests in a row one goes to the silent
	// region first; send until each kind met it.
	for i := 0; silentReads.Load() < 2 && i < 20; i++ {
		before := silentReads.Load()
		res := post(`"k` + strconv.Itoa(i) + `"`)
		if res.StatusCode != http.StatusCreated || res.Header.Get("X-Idempotency-Region") != "live" {
			t.Fatalf("keyed request %d: %d from %q; want the live region's 201 (sent there after the silent one timed out: %v)",
				i, res.StatusCode, res.Header.Get("X-Idempotency-Region"), silentReads.Load() > before)
		}
	}
	if silentReads.Load() < 2 {
		t.Fatalf("the silent region read %d requests; the test needs it to read keyed ones", silentReads.Load())
	}
	liveBefore := liveReads.Load()
	var got504 bool
	for i := 0; i < 4 && !got504; i++ {
		silentBefore := silentReads.Load()
		res := post("")
		if silentReads.Load() > silentBefore {
			if res.StatusCode != http.StatusGatewayTimeout {
				t.Fatalf("an unkeyed request the silent region read: %d; want 504 (never sent a second time)", res.StatusCode)
			}
			got504 = true
		}
	}
	if !got504 {
		t.Fatal("no unkeyed request reached the silent region")
	}
	if n := liveReads.Load() - liveBefore; n > 3 {
		t.Errorf("the live region read %d unkeyed requests for at most 3 sent to it", n)
	}
}

// TestEntrySendsToTheReachableRegionsWhenEveryRegionFailsItsReadiness:
// real haproxy in front of two regions whose /readyz both answer 503 (as
// when a second's etcd stall lapses every instance's liveness proof at
// once) but which serve requests. The entry takes both out of its main
// backend and sends the requests to the regions that accept a
// connection, each answering for itself, instead of answering 503
// no-region-available to everyone; with no region accepting a connection
// either, the entry's own 503 remains.
func TestEntrySendsToTheReachableRegionsWhenEveryRegionFailsItsReadiness(t *testing.T) {
	if _, err := Binary(); err != nil {
		t.Skip(err)
	}
	unready := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/readyz" {
				http.Error(w, "not ready: etcd liveness: lease not proven", http.StatusServiceUnavailable)
				return
			}
			w.Header().Set("X-Idempotency-Region", name)
			w.Write([]byte("ok\n"))
		})
	}
	a, b := httptest.NewServer(unready("a")), httptest.NewServer(unready("b"))
	cfg := Config{Listen: "127.0.0.1:0", Regions: []Region{{Name: "a", Addr: a.Listener.Addr().String()}, {Name: "b", Addr: b.Listener.Addr().String()}}}
	e, err := Start(t.Context(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	waitStates(t, ctx, e, map[string]bool{"a": false, "b": false})

	served := map[string]int{}
	for i := 0; i < 10; i++ {
		res, err := http.Get(e.URL + "/v1/x")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("request %d with every region unready: %d; want the regions' own 200", i, res.StatusCode)
		}
		served[res.Header.Get("X-Idempotency-Region")]++
	}
	if served["a"] == 0 || served["b"] == 0 {
		t.Errorf("served by %v; want both reachable regions in turn", served)
	}

	a.Close()
	b.Close()
	// The entry's L4 checks notice the closed regions within a few
	// intervals: poll the entry's answer, not a clock.
	testutil.Eventually(t, 30*time.Second, func() error {
		res, err := http.Get(e.URL + "/v1/x")
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
			return fmt.Errorf("with no region reachable the entry answers %d; want its own 503 with Retry-After", res.StatusCode)
		}
		return nil
	})
}
