package haproxy

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
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
