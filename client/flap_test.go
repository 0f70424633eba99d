package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/client"
	"github.com/idemcoord/idemcoord/internal/toxitest"
)

func TestDoThroughFlappingConnection(t *testing.T) {
	const intents = 20

	g := newGateway()
	g.latency = 2 * time.Millisecond
	upstream := httptest.NewServer(g)
	defer upstream.Close()

	proxy := toxitest.Proxy(t, "idemd", upstream.Listener.Addr().String())

	c, err := client.New(client.Config{
		BaseURL: "http://" + proxy.Listen,
		// A new connection per attempt, so each attempt meets the toxic
		// as it is at that moment; a short timeout in case a reset leaves
		// a connection hanging.
		HTTPClient:  &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 2 * time.Second},
		MaxAttempts: 200,
		BaseDelay:   5 * time.Millisecond,
		MaxDelay:    40 * time.Millisecond,
		Seed:        3,
	})
	if err != nil {
		t.Fatal(err)
	}

	// The toxic is on from the start, so the first attempts fail for sure.
	stop := make(chan struct{})
	var flapping sync.WaitGroup
	flapping.Add(1)
	go func() {
		defer flapping.Done()
		toxitest.Flap(t, proxy, 30, 40*time.Millisecond, 25*time.Millisecond, stop)
	}()

	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	type outcome struct {
		key  string
		resp *client.Response
		err  error
	}
	results := make([]outcome, intents)
	var work sync.WaitGroup
	for i := range intents {
		work.Add(1)
		go func() {
			defer work.Done()
			// Stagger the intents across the flapping.
			time.Sleep(time.Duration(i) * 15 * time.Millisecond)
			key := client.NewKey()
			resp, err := c.PostJSON(ctx, "/v1/payments", key, payment{Order: fmt.Sprintf("o-%d", i), Amount: i})
			results[i] = outcome{key, resp, err}
		}()
	}
	work.Wait()
	close(stop)
	flapping.Wait()

	attempts, replayed := 0, 0
	for i, r := range results {
		if r.err != nil {
			t.Errorf("intent %d: %v", i, r.err)
			continue
		}
		if r.resp.Status != http.StatusCreated {
			t.Errorf("intent %d: status %d; want 201", i, r.resp.Status)
		}
		if n := g.executions(r.key); n != 1 {
			t.Errorf("intent %d: upstream ran %d times; want exactly 1", i, n)
		}
		reqs := g.requests(r.key)
		for j, req := range reqs {
			if req != reqs[0] {
				t.Errorf("intent %d: request %d = %+v; want the same as request 0, %+v", i, j, req, reqs[0])
			}
		}
		attempts += r.resp.Attempts
		if r.resp.Replayed {
			replayed++
		}
	}
	t.Logf("%d intents took %d attempts; %d ended on a replay", intents, attempts, replayed)
	// The run only counts if the faults hit: some attempts failed, and some
	// answers were lost after the upstream ran.
	if attempts <= intents || replayed == 0 {
		t.Errorf("%d attempts and %d replays for %d intents: the toxic never hit", attempts, replayed, intents)
	}
}
