//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/client"
	"github.com/idemcoord/idemcoord/demo/bank"
	"github.com/idemcoord/idemcoord/devcluster"
)

// TestSDKRegionKilledMidRequestIntentAcknowledgedOnceFromAnother: the SDK
// knows all three regions and sends a payment to us-east, a real idemd
// process, which forwards it to eu-west, the actor's owner. While the
// bank sits on the charge, the us-east process is SIGKILLed: the SDK's
// connection breaks after the request was sent. The SDK retries the same
// intent (same key and body) in the next region; the owner answers it
// from its record, so the payment is acknowledged once, by eu-west, with
// one bank charge. The next intent goes straight to eu-west: the answer
// named it as the owner, and us-east's breaker is open.
func TestSDKRegionKilledMidRequestIntentAcknowledgedOnceFromAnother(t *testing.T) {
	c := startCluster(t, devcluster.Options{})
	us := regionProcess(t, c, "sdk-us-0", "reject")
	actor := c.ActorHomedIn("eu-west", uniqueName("sdk-kill"))
	tok := token(t, c, actor)
	regions := []client.Region{{Name: "us-east", URL: us.URL}}
	for _, r := range c.Regions[1:] {
		regions = append(regions, client.Region{Name: r.Name, URL: r.URL})
	}
	sdk, err := client.New(client.Config{Regions: regions, Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Bank.SetFaults(bank.Faults{DelayAfter: procBankDelay}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	type result struct {
		resp *client.Response
		err  error
	}
	done := make(chan result, 1)
	key := uniqueName("sdk-kill-key")
	var body map[string]string
	json.Unmarshal(paymentBody("9.00", key), &body)
	go func() {
		resp, err := sdk.PostJSON(ctx, "/v1/payments", key, body)
		done <- result{resp, err}
	}()
	opID := waitOperationOf(t, c, "bank charge", `SELECT operation_id FROM bank_charges WHERE actor = $1`, scope(actor), 10*time.Second)
	kill(t, us) // mid-request: eu-west is waiting on the bank
	killed := time.Now()
	if err := c.Bank.SetFaults(bank.Faults{}); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the SDK did not answer within 30 s of the kill")
	}
	if r.err != nil || r.resp.Status != http.StatusCreated || r.resp.OperationID != opID {
		t.Fatalf("PostJSON = %+v, %v; want 201 for operation %s", r.resp, r.err, opID)
	}
	if got := r.resp.Header.Get("X-Idempotency-Region"); got != "eu-west" || r.resp.Attempts < 2 {
		t.Fatalf("answered by %q on attempt %d; want eu-west after the failed attempt in us-east", got, r.resp.Attempts)
	}
	t.Logf("acknowledged by eu-west %v after the kill, on attempt %d (replayed: %v)",
		time.Since(killed).Round(time.Millisecond), r.resp.Attempts, r.resp.Replayed)
	l := ledger{t, c}
	l.exactlyOnce("the intent whose region was killed", opID)
	if rows, charges := l.byActor(scope(actor)); rows != 1 || charges != 1 {
		t.Fatalf("actor has %d payments and %d charges; want 1 and 1", rows, charges)
	}

	next, err := sdk.PostJSON(ctx, "/v1/payments", uniqueName("sdk-next"), body)
	if err != nil || next.Status != http.StatusCreated || next.Attempts != 1 || next.Header.Get("X-Idempotency-Region") != "eu-west" {
		t.Fatalf("next intent = %+v, %v; want 201 from eu-west on the first attempt", next, err)
	}
}
