package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/demo/bank"
	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/internal/testutil"
)

// TestUpstreamTimeoutResolvedWithoutSecondCharge makes the bank record the
// charge and then answer late, past the gateway's upstream timeout: the
// outcome is unknown (design step 5). The first answer is 504
// OUTCOME_UNKNOWN and the record says so; a retry must never gamble on a
// re-run — it asks the payments service's resolve endpoint, which asks the
// bank "was it charged?" — and ends as a replayed 201 with the one payment,
// the bank holding exactly one charge (invariant I2: an ambiguous outcome
// resolves to zero or one, never two).
func TestUpstreamTimeoutResolvedWithoutSecondCharge(t *testing.T) {
	t.Parallel()
	c := startCluster(t, devcluster.Options{UpstreamTimeout: 500 * time.Millisecond, BankTimeout: 5 * time.Second})
	actor := uniqueName("timeout")
	tok := token(t, c, actor)
	key := uniqueName("timeout-key")
	body := paymentBody("250.00", "order-timeout")
	region := c.Regions[0]
	l := ledger{t, c}
	recorded0 := sumMetric(t, c, metricEvents, `event="outcome_unknown_recorded"`)
	resolved0 := sumMetric(t, c, metricEvents, `event="outcome_unknown_resolved"`)

	if err := c.Bank.SetFaults(bank.Faults{DelayAfter: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	first := mustPost(t, region.URL, tok, key, body)
	t.Logf("first answer after %v: %v", time.Since(start).Round(time.Millisecond), first)
	if first.Status != http.StatusGatewayTimeout {
		t.Fatalf("first answer %v; want 504", first)
	}
	p := first.problem(t)
	if p.OperationState != "OUTCOME_UNKNOWN" || !strings.HasSuffix(p.Type, "/outcome-unknown") || p.NewKeySafe {
		t.Errorf("504 problem %+v; want outcome-unknown, OUTCOME_UNKNOWN, new_key_safe false", p)
	}
	if first.retryAfter() < 1 {
		t.Errorf("504 Retry-After %q; want whole seconds >= 1", first.Header.Get("Retry-After"))
	}
	opID := first.opID()
	if opID == "" || p.OperationID != opID {
		t.Fatalf("504 operation id: header %q, body %q; want the same, set", opID, p.OperationID)
	}
	r, op := getOperation(t, region.URL, tok, opID)
	if r.Status != http.StatusOK || op.State != "OUTCOME_UNKNOWN" {
		t.Errorf("operation after the 504: %v; want 200 with state OUTCOME_UNKNOWN", r)
	}
	// The bank records, then sleeps: the charge is there, or about to be
	// on a loaded machine.
	var n int
	_ = testutil.PollEvery(2*time.Second, 100*time.Millisecond, testutil.Cond(func() bool {
		n = l.charges(opID)
		return n != 0
	}))
	if n != 1 {
		t.Errorf("bank has %d charges after the 504; the fault records before answering late, want 1", n)
	}

	// A retry while the bank is still slow must not charge again.
	retry := mustPost(t, c.Regions[1].URL, tok, key, body)
	t.Logf("retry during the fault: %v (replayed %v)", retry, retry.replayed())
	switch retry.Status {
	case http.StatusCreated, http.StatusConflict:
	default:
		t.Errorf("retry during the fault: %v; want 201 (resolved) or 409 (still unknown)", retry)
	}
	if n := l.charges(opID); n != 1 {
		t.Errorf("bank has %d charges after a retry; want 1", n)
	}

	if err := c.Bank.SetFaults(bank.Faults{}); err != nil {
		t.Fatal(err)
	}
	final, i := retry, 0
	if testutil.PollEvery(15*time.Second, 200*time.Millisecond, func() error {
		if i > 0 {
			final = mustPost(t, c.Regions[(i-1)%3].URL, tok, key, body)
		}
		i++
		switch {
		case final.Status == http.StatusCreated:
			return nil
		case final.Status != http.StatusConflict:
			t.Fatalf("retry %d: %v; want 409 until resolved, then 201", i, final)
		case final.retryAfter() < 1:
			t.Errorf("409 Retry-After %q; want whole seconds >= 1", final.Header.Get("Retry-After"))
		}
		return fmt.Errorf("not resolved: last answer %v", final)
	}) != nil {
		t.Fatalf("not resolved within the bound: last answer %v", final)
	}
	if !final.replayed() {
		t.Errorf("resolved answer not marked Idempotent-Replayed")
	}
	if final.opID() != opID {
		t.Errorf("resolved answer names operation %q; want %q", final.opID(), opID)
	}
	row := l.find(opID)
	if rc := final.receipt(t); rc.PaymentID != row.ID.String() || rc.Amount != "250.00" {
		t.Errorf("resolved receipt %+v; want payment %s of 250.00", rc, row.ID)
	}

	// Let the late original finish on the payments side, then count again.
	// Deliberate: a late original that does nothing wrong leaves no mark
	// to wait for; the count must come after it had its chance.
	time.Sleep(time.Until(start.Add(2500 * time.Millisecond)))
	l.exactlyOnce("after the resolve and the late original", opID)
	if rows, charges := l.byActor(scope(actor)); rows != 1 || charges != 1 {
		t.Errorf("actor has %d rows, %d charges; want 1 and 1", rows, charges)
	}
	if row := l.find(opID); row.Status != "succeeded" {
		t.Errorf("payment status %q; want succeeded", row.Status)
	}
	r, op = getOperation(t, region.URL, tok, opID)
	if r.Status != http.StatusOK || op.State != "COMPLETED" || op.Response == nil || op.Response.Status != http.StatusCreated {
		t.Errorf("operation after the resolve: %v; want COMPLETED with a stored 201", r)
	}
	again := mustPost(t, c.Regions[2].URL, tok, key, body)
	if again.Status != http.StatusCreated || !again.replayed() || string(again.Body) != string(final.Body) {
		t.Errorf("replay after the resolve: %v; want the resolved 201 again", again)
	}

	// The store counts the unknown outcome being recorded and resolved
	// (each in the region that did it; sum over the regions).
	for _, m := range []struct {
		outcome string
		was     float64
	}{{"outcome_unknown_recorded", recorded0}, {"outcome_unknown_resolved", resolved0}} {
		if now := sumMetric(t, c, metricEvents, `event="`+m.outcome+`"`); now-m.was < 1 {
			t.Errorf("%s{event=%q} went from %v to %v; want it to grow", metricEvents, m.outcome, m.was, now)
		}
	}
}
