package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestKeyReusedWithDifferentBody sends a second, different payment under a
// key that already paid (invariant I5): 422 fingerprint-mismatch from every
// region, no second charge, and the first payment and its stored answer
// unchanged.
func TestKeyReusedWithDifferentBody(t *testing.T) {
	c := sharedCluster(t)
	actor := uniqueName("mismatch")
	tok := token(t, c, actor)
	key := uniqueName("mismatch-key")
	l := ledger{t, c}

	first := mustPost(t, c.Regions[0].URL, tok, key, paymentBody("12.50", "order-mismatch"))
	if first.Status != http.StatusCreated {
		t.Fatalf("first payment: %v; want 201", first)
	}
	opID := first.opID()
	before := l.find(opID)

	for _, region := range c.Regions {
		r := mustPost(t, region.URL, tok, key, paymentBody("99.00", "order-mismatch"))
		if r.Status != http.StatusUnprocessableEntity {
			t.Errorf("%s: changed amount: %v; want 422", region.Name, r)
			continue
		}
		p := r.problem(t)
		if !strings.HasSuffix(p.Type, "fingerprint-mismatch") || p.Status != http.StatusUnprocessableEntity || !p.NewKeySafe {
			t.Errorf("%s: problem %+v; want type .../fingerprint-mismatch, status 422, new_key_safe true", region.Name, p)
		}
		if r.replayed() {
			t.Errorf("%s: a 422 marked Idempotent-Replayed", region.Name)
		}
	}

	l.exactlyOnce("key reused with another amount", opID)
	if rows, charges := l.byActor(scope(actor)); rows != 1 || charges != 1 {
		t.Errorf("actor has %d payments rows and %d charges; want 1 and 1", rows, charges)
	}
	if diff := cmp.Diff(before, l.find(opID)); diff != "" {
		t.Errorf("first payment changed (-before +after):\n%s", diff)
	}
	// The stored record is untouched too: the original body still replays.
	again := mustPost(t, c.Regions[1].URL, tok, key, paymentBody("12.50", "order-mismatch"))
	if again.Status != http.StatusCreated || !again.replayed() || string(again.Body) != string(first.Body) {
		t.Errorf("original body after the 422s: %v (replayed %v); want the first answer replayed", again, again.replayed())
	}
	_, op := getOperation(t, c.Regions[2].URL, tok, opID)
	if op.State != "COMPLETED" {
		t.Errorf("operation state %q after the 422s; want COMPLETED", op.State)
	}
}
