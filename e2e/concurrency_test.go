package e2e

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentRetriesAcrossRegions fires 64 copies of one intent (one
// key, one body) at once, round-robin over the three regions. Invariant I1:
// one claim and one business effect globally — one payments row and one
// bank charge — whatever region each copy landed in. Every 2xx carries the
// one payment; everything else is 409 with Retry-After (never a 500, a 429
// or a 503, which would mean the store buckled under contention on one key).
// A later retry replays the stored answer byte for byte.
func TestConcurrentRetriesAcrossRegions(t *testing.T) {
	const copies = 64
	c := sharedCluster(t)
	actor := uniqueName("race")
	tok := token(t, c, actor)
	key := uniqueName("race-key")
	body := paymentBody("42.00", "order-race")

	ctx, cancel := context.WithTimeout(t.Context(), 2*requestTimeout)
	defer cancel()
	replies := make([]reply, copies)
	errs := make([]error, copies)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for i := range copies {
		wg.Go(func() {
			<-gate // release all copies together
			replies[i], errs[i] = postPayment(ctx, c.Regions[i%len(c.Regions)].URL, tok, key, body)
		})
	}
	close(gate)
	wg.Wait()

	var (
		first    *reply // a first-run 2xx, not a replay
		payment  string
		opIDs    = map[string]int{}
		statuses = map[int]int{}
	)
	for i, r := range replies {
		if errs[i] != nil {
			t.Errorf("copy %d (%s): %v", i, c.Regions[i%len(c.Regions)].Name, errs[i])
			continue
		}
		statuses[r.Status]++
		opIDs[r.opID()]++
		switch {
		case r.Status >= 200 && r.Status < 300:
			rc := r.receipt(t)
			if payment == "" {
				payment = rc.PaymentID
			} else if rc.PaymentID != payment {
				t.Errorf("copy %d: payment_id %s; another 2xx carried %s", i, rc.PaymentID, payment)
			}
			if !r.replayed() {
				if first != nil {
					t.Errorf("copy %d: a second first-run answer (not replayed): %v", i, r)
				}
				first = &replies[i]
			}
		case r.Status == http.StatusConflict:
			if r.retryAfter() < 1 {
				t.Errorf("copy %d: 409 with Retry-After %q; want whole seconds >= 1", i, r.Header.Get("Retry-After"))
			}
			if p := r.problem(t); !strings.HasSuffix(p.Type, "/in-progress") || p.NewKeySafe {
				t.Errorf("copy %d: 409 problem %+v; want type in-progress, new_key_safe false", i, p)
			}
		default:
			t.Errorf("copy %d (%s): %v; want 2xx or 409", i, c.Regions[i%len(c.Regions)].Name, r)
		}
	}
	t.Logf("statuses %v, operation ids %d", statuses, len(opIDs))
	if len(opIDs) != 1 || opIDs[""] != 0 {
		t.Errorf("answers named operations %v; want one operation id on every answer", opIDs)
	}
	if first == nil {
		t.Fatalf("no copy got the first run's answer; statuses %v", statuses)
	}
	opID := first.opID()
	l := ledger{t, c}
	l.exactlyOnce("one key, 64 copies", opID)
	if rows, charges := l.byActor(scope(actor)); rows != 1 || charges != 1 {
		t.Errorf("actor %s has %d payments rows and %d charges; want 1 and 1", actor, rows, charges)
	}
	if p := l.find(opID); p.ID.String() != payment {
		t.Errorf("payments row of the operation is %s; answers said %s", p.ID, payment)
	}

	// Later, each region replays the stored answer.
	for _, region := range c.Regions {
		r := mustPost(t, region.URL, tok, key, body)
		if r.Status != http.StatusCreated || !r.replayed() {
			t.Errorf("%s: later retry %v, Idempotent-Replayed %q; want a 201 replay", region.Name, r, r.Header.Get("Idempotent-Replayed"))
		}
		if !bytes.Equal(r.Body, first.Body) {
			t.Errorf("%s: replayed body %q; want the first run's %q", region.Name, r.Body, first.Body)
		}
		if r.opID() != opID {
			t.Errorf("%s: replay names operation %q; want %q", region.Name, r.opID(), opID)
		}
		if loc := r.Header.Get("Location"); loc != first.Header.Get("Location") {
			t.Errorf("%s: replayed Location %q; want %q", region.Name, loc, first.Header.Get("Location"))
		}
	}
	l.exactlyOnce("after the replays", opID)
}
