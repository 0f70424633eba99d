package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/demo/bank"
	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/internal/testutil"
)

// TestClientHangUpStillRecordsOutcome has the client give up on a request
// while the upstream is still working on it. The gateway detaches the
// upstream call from the client's connection so that a hang-up does not
// make the outcome unknown for nothing (gateway.Proxy.Execute); the
// payment completes, so the operation must be recorded COMPLETED and the
// client's retry a moment later must replay the 201 — not wait out the
// 30 s lease behind 409s while the record stays IN_PROGRESS.
func TestClientHangUpStillRecordsOutcome(t *testing.T) {
	t.Parallel()
	c := startCluster(t, devcluster.Options{})
	actor := uniqueName("hangup")
	tok := token(t, c, actor)
	key := uniqueName("hangup-key")
	body := paymentBody("15.00", "order-hangup")
	region := c.Regions[0]
	l := ledger{t, c}

	if err := c.Bank.SetFaults(bank.Faults{DelayBefore: time.Second}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	_, err := postPayment(ctx, region.URL, tok, key, body)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the client was to give up after 300ms; got %v", err)
	}
	if err := c.Bank.SetFaults(bank.Faults{}); err != nil {
		t.Fatal(err)
	}
	// The payment finishes about a second after it started: the retry
	// is a 409 until then, and a 201 replay once it is recorded, well
	// before the 30 s lease could have been waited out.
	var r reply
	testutil.EventuallyEvery(t, 10*time.Second, 100*time.Millisecond, func() error {
		r = mustPost(t, region.URL, tok, key, body)
		switch {
		case r.Status == http.StatusCreated && r.replayed():
			return nil
		case r.Status == http.StatusConflict:
			return fmt.Errorf("retry after the hang-up: %v, the operation still in progress", r)
		}
		rec, op := getOperation(t, region.URL, tok, r.opID())
		t.Fatalf("retry after the hang-up: %v (Retry-After %q); want a 201 replay — the operation is %s (%v)",
			r, r.Header.Get("Retry-After"), op.State, rec.Status)
		return nil
	})
	opID := r.opID()
	if opID == "" {
		t.Fatal("no operation id")
	}
	l.exactlyOnce("hung-up request", opID)
	if row := l.find(opID); row.Status != "succeeded" {
		t.Errorf("payment %s; want succeeded", row.Status)
	}
}
