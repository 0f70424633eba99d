package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/client"
	"github.com/idemcoord/idemcoord/internal/toxitest"
)

// TestSDKThroughFlappingConnection runs 20 intents through the Go SDK while
// the connection to one region's gateway is cut with TCP resets, on and
// off: upstream-direction resets lose requests before the gateway saw
// them, downstream ones lose answers after it ran the payment. Every
// intent must end 201 — the SDK retries under the same key, the gateway
// replays or holds the retry until the first run is recorded — and every
// operation must have exactly one bank charge, with none under any other
// operation id of the actor.
func TestSDKThroughFlappingConnection(t *testing.T) {
	const intents = 20
	c := sharedCluster(t)
	actor := uniqueName("flap")
	tok := token(t, c, actor)
	region := c.Regions[2]
	target, err := url.Parse(region.URL)
	if err != nil {
		t.Fatal(err)
	}

	proxy := toxitest.Proxy(t, "idemd-"+region.Name, target.Host)

	sdk, err := client.New(client.Config{
		BaseURL: "http://" + proxy.Listen,
		Token:   tok,
		// A new connection per attempt, so each attempt meets the toxic as
		// it is then; a short timeout in case a reset leaves one hanging.
		HTTPClient:  &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second},
		MaxAttempts: 200,
		BaseDelay:   5 * time.Millisecond,
		MaxDelay:    100 * time.Millisecond,
		Seed:        7,
	})
	if err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var flapping sync.WaitGroup
	flapping.Go(func() { toxitest.Flap(t, proxy, 40, 60*time.Millisecond, 40*time.Millisecond, stop) })

	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()
	type outcome struct {
		resp *client.Response
		err  error
		took time.Duration
	}
	results := make([]outcome, intents)
	var work sync.WaitGroup
	start := time.Now()
	for i := range intents {
		work.Go(func() {
			// Stagger the intents across the flapping.
			time.Sleep(time.Duration(i) * 20 * time.Millisecond)
			began := time.Now()
			resp, err := sdk.PostJSON(ctx, "/v1/payments", client.NewKey(),
				map[string]string{"amount": fmt.Sprintf("%d.25", i+1), "currency": "EUR", "reference": fmt.Sprintf("flap-%d", i)})
			results[i] = outcome{resp, err, time.Since(began)}
		})
	}
	work.Wait()
	close(stop)
	flapping.Wait()

	l := ledger{t, c}
	attempts, replayed, slowest := 0, 0, time.Duration(0)
	for i, r := range results {
		slowest = max(slowest, r.took)
		if r.err != nil {
			t.Errorf("intent %d: %v after %v", i, r.err, r.took.Round(time.Millisecond))
			continue
		}
		if r.resp.Status != http.StatusCreated {
			t.Errorf("intent %d: status %d; want 201", i, r.resp.Status)
		}
		l.exactlyOnce(fmt.Sprintf("intent %d", i), r.resp.OperationID)
		attempts += r.resp.Attempts
		if r.resp.Replayed {
			replayed++
		}
	}
	if rows, charges := l.byActor(scope(actor)); charges != intents || rows != intents {
		t.Errorf("actor has %d payments rows and %d charges for %d intents; want one each", rows, charges, intents)
	}
	t.Logf("%d intents in %v (slowest %v): %d attempts, %d ended on a replay", intents,
		time.Since(start).Round(time.Millisecond), slowest.Round(time.Millisecond), attempts, replayed)
	// The run only counts if the faults hit: some attempts failed.
	if attempts <= intents {
		t.Errorf("%d attempts for %d intents: the toxic never hit", attempts, intents)
	}
}
