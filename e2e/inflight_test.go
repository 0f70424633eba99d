package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/internal/testutil"
)

// TestAKilledRegionsInFlightPaymentIsAnsweredRightAfterTheFailover: the
// only idemd of us-east (a real process) is SIGKILLed while a payment is
// in flight there (the bank charged it; the answer never came back). The
// payment endpoint declares upstream_dedup: operation_id (the payments
// service's operation_id is unique). The client keeps retrying the same
// intent at eu-west from the kill on, while new intents measure the
// failover. Once us-east's shards moved to eu-west under a new epoch,
// the retry is answered with the one payment, same operation id, while
// the dead worker's 30 s lease is still live: eu-west did not wait it
// out. The bank holds one charge. The times from the kill to the first
// new success (failover) and to the in-flight intent's answer are logged
// (the latter may come first: both wait for the same move).
func TestAKilledRegionsInFlightPaymentIsAnsweredRightAfterTheFailover(t *testing.T) {
	c := startCluster(t, devcluster.Options{Failover: "transfer", UpstreamTimeout: 5 * time.Second,
		BankTimeout: 5 * time.Second, UpstreamDedup: "operation_id",
		FailoverTimings: failover.Config{HoldTime: 500 * time.Millisecond}})
	eu := c.Region("eu-west")
	l := ledger{t, c}
	// us-east's own idemd, as regionProcess starts it, with the lease and
	// the declaration the payments endpoint has in production.
	idemdBinary(t)
	us := c.Region("us-east")
	if err := c.StopRegion(t.Context(), us.Name); err != nil {
		t.Fatal(err)
	}
	p := startIdemdWith(t, c, "fo-inflight", procOptions{listen: strings.TrimPrefix(us.URL, "http://"), failover: "transfer",
		editConfig: func(b []byte) []byte {
			lease := fmt.Sprintf("    lease: %s\n", procLease)
			if !bytes.Contains(b, []byte(lease)) {
				t.Fatalf("process config has no %q", lease)
			}
			return bytes.Replace(b, []byte(lease), []byte("    lease: 30s\n    upstream_dedup: operation_id\n"), 1)
		}})
	actor := c.ActorHomedIn("us-east", uniqueName("fo-inflight"))
	tok := token(t, c, actor)
	key := uniqueName("fo-inflight-key")
	body := paymentBody("5.00", key)
	opID, killed, held := inFlight(t, c, p, tok, actor, key, body)

	var failedOver, answered time.Duration
	var final reply
	if testutil.PollEvery(time.Until(killed.Add(failoverDeadline)), 100*time.Millisecond, func() error {
		if failedOver == 0 {
			r := mustPost(t, eu.URL, tok, uniqueName("fo-new"), paymentBody("1.00", "new"))
			switch {
			case r.Status == http.StatusCreated:
				failedOver = time.Since(killed)
			case r.Status != http.StatusServiceUnavailable || r.retryAfter() == 0:
				t.Fatalf("a new intent while failing over: %v; want 503 with Retry-After", r)
			}
		}
		if answered == 0 {
			r := mustPost(t, eu.URL, tok, key, body)
			switch r.Status {
			case http.StatusCreated:
				answered, final = time.Since(killed), r
			case http.StatusServiceUnavailable, http.StatusConflict, http.StatusGatewayTimeout:
				// Before the move: the owner is gone (503); a takeover by
				// eu-west's sweep in progress (409); a forward to the dead
				// owner that never came back (504).
			default:
				t.Fatalf("retry of the in-flight intent: %v; want 503, 409 or 504 until it is answered", r)
			}
		}
		if answered == 0 || failedOver == 0 {
			return fmt.Errorf("failover after %v, in-flight intent answered after %v (0: not yet)", failedOver, answered)
		}
		return nil
	}) != nil {
		t.Fatalf("within %v of the kill: failover after %v, in-flight intent answered after %v (0: not yet)",
			failoverDeadline, failedOver, answered)
	}
	if final.opID() != opID {
		t.Errorf("in-flight intent answered as operation %s; want %s", final.opID(), opID)
	}
	end := leaseEnd(t, c, held)
	if !dbNow(t, c).Before(held.LeaseExpires) { // by the clock the store decides leases by
		t.Errorf("answered only after the dead worker's lease ended (%v after the kill): it was waited out",
			time.Until(end)+time.Since(killed))
	}
	t.Logf("from the kill: failover (first new success in eu-west) %v, in-flight intent answered %v (%v after the failover); the dead lease had %v left",
		failedOver.Round(time.Millisecond), answered.Round(time.Millisecond), (answered - failedOver).Round(time.Millisecond),
		time.Until(end).Round(time.Millisecond))
	l.exactlyOnce("after the failover", opID)
}
