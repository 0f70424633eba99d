package client

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
)

// countingRegion serves 201 to intents and 200 (or 503 while notReady) to
// /readyz, counting both.
type countingRegion struct {
	intents, probes atomic.Int32
	notReady        atomic.Bool
}

func (r *countingRegion) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path == "/readyz" {
		r.probes.Add(1)
		if r.notReady.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		return
	}
	r.intents.Add(1)
	w.WriteHeader(http.StatusCreated)
}

// TestTrippedRegionTakesNoIntentUntilItsReadyzProbeSucceeds: a region
// that refused a connection gets no intent while its breaker is open, even
// once it listens again; when the cooldown has passed on the client's
// clock it is probed (GET /readyz, in the background) and, while the probe
// says not ready, still gets nothing; after a ready probe it is the first
// region again.
func TestTrippedRegionTakesNoIntentUntilItsReadyzProbeSucceeds(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // refused until it listens again
	other := &countingRegion{}
	otherSrv := &http.Server{Handler: other}
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go otherSrv.Serve(ln2)
	t.Cleanup(func() { otherSrv.Close() })

	fake := clock.NewFake(breakerEpoch)
	c, err := New(Config{Regions: []Region{{URL: "http://" + addr}, {URL: "http://" + ln2.Addr().String()}}, Clock: fake,
		HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	post := func() {
		t.Helper()
		// A bound in real time: a client that waited on its fake clock
		// instead of switching regions would otherwise wait forever.
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if _, err := c.PostJSON(ctx, "/v1/payments", NewKey(), map[string]int{"amount": 1}); err != nil {
			t.Fatal(err)
		}
	}
	post() // refused by the first region, served by the second at once

	back := &countingRegion{}
	back.notReady.Store(true)
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the freed port %s was taken meanwhile: %v", addr, err)
	}
	backSrv := &http.Server{Handler: back}
	go backSrv.Serve(ln)
	t.Cleanup(func() { backSrv.Close() })

	post() // the first region's breaker is open: not even probed yet
	c.regions.probes.Wait()
	if n, p := back.intents.Load(), back.probes.Load(); n != 0 || p != 0 {
		t.Fatalf("during its cooldown the tripped region got %d intents and %d probes; want none", n, p)
	}
	fake.Advance(breakerCooldown)
	post() // starts a probe, which says not ready
	c.regions.probes.Wait()
	post()
	if n, p := back.intents.Load(), back.probes.Load(); n != 0 || p != 1 {
		t.Fatalf("after a not-ready probe the region got %d intents and %d probes; want 0 and 1", n, p)
	}
	back.notReady.Store(false)
	fake.Advance(2 * breakerCooldown) // the doubled wait
	post()
	c.regions.probes.Wait()
	post()
	if n, p := back.intents.Load(), back.probes.Load(); n != 1 || p != 2 {
		t.Fatalf("after a ready probe the region got %d intents and %d probes; want 1 and 2", n, p)
	}
	if n := other.intents.Load(); n != 5 {
		t.Fatalf("the other region served %d intents; want 5", n)
	}
}
