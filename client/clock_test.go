package client_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/client"
	"github.com/idemcoord/idemcoord/clock"
)

// TestDoWaitsOnItsClock: the wait between attempts (here the server's
// Retry-After of 30 s) runs on Config.Clock: Do stays blocked until the
// clock is moved past it, and then retries. No real time passes.
func TestDoWaitsOnItsClock(t *testing.T) {
	g := newGateway()
	g.failFirst, g.failStatus, g.retryAfter = 1, http.StatusServiceUnavailable, "30"
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	fake := clock.NewFake(testEpoch)
	c, err := client.New(client.Config{BaseURL: srv.URL, Clock: fake, Seed: 1,
		HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		resp *client.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := c.PostJSON(t.Context(), "/v1/payments", client.NewKey(), payment{})
		done <- result{resp, err}
	}()
	fake.BlockUntil(1) // Do waits on the fake clock
	fake.Advance(30*time.Second - time.Millisecond)
	if n := fake.Waiters(); n != 1 {
		t.Fatalf("%d waits pending 1 ms before the Retry-After ends, want Do's one", n)
	}
	fake.Advance(time.Millisecond)
	r := <-done
	if r.err != nil || r.resp.Status != http.StatusCreated || r.resp.Attempts != 2 {
		t.Fatalf("Do = %+v, %v; want 201 on the second attempt", r.resp, r.err)
	}
}
