package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/internal/retry"
	"github.com/idemcoord/idemcoord/internal/testutil"
)

// TestStoreOutage stops PostgreSQL under a serving cluster. While it is
// down every coordinated request is held for the store's hold (a primary
// failing over is found within it), then answered 503 store-unavailable
// with Retry-After
// and nothing is sent upstream (the contract's "nothing sent upstream":
// without a claim there is no execution); /readyz says not ready. Once it
// is back, retries of the very same keys end 201, each with exactly one
// payment and one charge.
func TestStoreOutage(t *testing.T) {
	t.Parallel()
	upstream := newUpstreamCounter()
	c := startCluster(t, devcluster.Options{Transport: upstream})
	if c.Postgres == nil {
		t.Skip("the cluster runs on an external database; this test stops PostgreSQL")
	}
	actor := uniqueName("outage")
	tok := token(t, c, actor)
	body := paymentBody("19.99", "order-outage")
	l := ledger{t, c}

	// Serve once in every region first, so the outage hits warm pools and
	// cached fences, as in production.
	for _, r := range c.Regions {
		if warm := mustPost(t, r.URL, tok, uniqueName("warm"), body); warm.Status != http.StatusCreated {
			t.Fatalf("%s warm-up: %v", r.Name, warm)
		}
	}
	rows0, charges0 := l.totals()
	calls0 := upstream.count()

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	haltedAt := time.Now()
	if err := c.Postgres.Halt(ctx); err != nil {
		t.Fatalf("halting PostgreSQL: %v", err)
	}
	resumed := false
	defer func() {
		if !resumed {
			c.Postgres.Resume(context.Background())
		}
	}()
	t.Logf("PostgreSQL halted in %v", time.Since(haltedAt).Round(time.Millisecond))

	// New keys, spread over at least a second and a half of downtime, so
	// that every pooled connection has been found dead.
	keys := make([]string, 9)
	for i := range keys {
		if i > 0 {
			time.Sleep(200 * time.Millisecond) // deliberate: the keys spread over the downtime
		}
		keys[i] = uniqueName("outage-key")
		region := c.Regions[i%len(c.Regions)]
		began := time.Now()
		r := mustPost(t, region.URL, tok, keys[i], body)
		took := time.Since(began)
		if r.Status != http.StatusServiceUnavailable {
			t.Errorf("%s, store down: %v; want 503", region.Name, r)
			continue
		}
		if r.retryAfter() < 1 {
			t.Errorf("%s: 503 Retry-After %q; want whole seconds >= 1", region.Name, r.Header.Get("Retry-After"))
		}
		if p := r.problem(t); !strings.HasSuffix(p.Type, "/store-unavailable") {
			t.Errorf("%s: problem %+v; want store-unavailable", region.Name, p)
		}
		if hold := retry.Default.Store.Hold; took > hold+5*time.Second {
			t.Errorf("%s: the 503 took %v; a down store should be refused once the %v hold has passed", region.Name, took, hold)
		}
	}
	for _, r := range c.Regions {
		rd, err := send(ctx, http.MethodGet, r.URL+"/readyz", "", nil, nil)
		if err != nil || rd.Status != http.StatusServiceUnavailable {
			t.Errorf("%s /readyz with the store down: %v %v; want 503", r.Name, rd, err)
		}
	}
	if calls := upstream.count() - calls0; calls != 0 {
		t.Errorf("%d upstream calls while the store was down; want none", calls)
	}

	if err := c.Postgres.Resume(ctx); err != nil {
		t.Fatalf("resuming PostgreSQL: %v", err)
	}
	resumed = true
	t.Logf("PostgreSQL down for %v", time.Since(haltedAt).Round(time.Millisecond))
	if rows, charges := l.totals(); rows != rows0 || charges != charges0 {
		t.Errorf("after the outage: %d payments rows and %d charges; before it %d and %d — the requests refused during it ran",
			rows, charges, rows0, charges0)
	}

	// The same keys, retried: bounded in count and time.
	deadline := time.Now().Add(20 * time.Second)
	recovery := map[int]int{}
	for i, key := range keys {
		region := c.Regions[i%len(c.Regions)]
		var r reply
		_ = testutil.PollEvery(time.Until(deadline), 250*time.Millisecond, func() error {
			if r = mustPost(t, region.URL, tok, key, body); r.Status == http.StatusCreated {
				return nil
			}
			recovery[r.Status]++
			if r.Status != http.StatusServiceUnavailable && r.Status != http.StatusConflict {
				t.Errorf("%s: retry after the outage: %v; want 503/409 while recovering, then 201", region.Name, r)
			}
			return fmt.Errorf("%s: %v", region.Name, r)
		})
		if r.Status != http.StatusCreated {
			t.Errorf("key %d (%s): no 201 after the store came back; last %v", i, region.Name, r)
			continue
		}
		l.exactlyOnce("key sent during the outage", r.opID())
	}
	t.Logf("answers before the 201s after the outage: %v", recovery)
	if rows, charges := l.byActor(scope(actor)); rows != len(keys)+len(c.Regions) || charges != rows {
		t.Errorf("actor has %d rows and %d charges; want %d each (warm-ups and outage keys)", rows, charges, len(keys)+len(c.Regions))
	}
	for _, r := range c.Regions {
		rd, err := send(ctx, http.MethodGet, r.URL+"/readyz", "", nil, nil)
		if err != nil || rd.Status != http.StatusOK {
			t.Errorf("%s /readyz after the outage: %v %v; want 200", r.Name, rd, err)
		}
	}
}
