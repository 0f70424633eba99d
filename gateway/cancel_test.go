package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// TestCancelBeforeTheIrreversibleStageNeverTakesEffect: a payment still
// reserved is cancelled (200 "cancelled"); released afterwards, the demo's
// task finds the cancel and never charges; a retry of the original POST
// replays the cancellation (Idempotent-Replayed, no second task); GET
// shows CANCELLED; a second DELETE answers cancelled again.
func TestCancelBeforeTheIrreversibleStageNeverTakesEffect(t *testing.T) {
	e := newCancelEnv(t)
	op := e.accepted("alice", "pay-1", "order-1")
	e.hold.BlockUntil(1) // the demo holds the payment reserved
	r := e.cancel("alice", op)
	if r.status != http.StatusOK || r.body["result"] != "cancelled" || r.body["state"] != "CANCELLED" ||
		r.header.Get(gateway.HeaderReplayed) != "" {
		t.Fatalf("DELETE: %d %v %v, want 200 cancelled, not a replay", r.status, r.header, r.body)
	}
	e.hold.Advance(cancelHold) // the task goes on to its capture, and loses
	e.g.Close()                // waits for the background run to end
	if charges, rows := e.effects(op); charges != 0 || rows != 0 {
		t.Fatalf("after the cancel: %d charges, %d payments, want none", charges, rows)
	}
	rec := e.record("alice", op)
	if rec.State != idempotency.Cancelled {
		t.Fatalf("record %s, want CANCELLED", rec.State)
	}
	retry := e.pay("alice", "pay-1", "order-1")
	if retry.status != http.StatusConflict || retry.header.Get(gateway.HeaderReplayed) != "true" ||
		!strings.HasSuffix(retry.body["type"].(string), "/operation-cancelled") ||
		retry.header.Get(gateway.HeaderOperationID) != op {
		t.Fatalf("retry of the POST: %d %v %v, want the replayed cancellation of %s", retry.status, retry.header, retry.body, op)
	}
	if charges, rows := e.effects(op); charges != 0 || rows != 0 {
		t.Fatalf("after the retry: %d charges, %d payments, want none", charges, rows)
	}
	if got := e.status("alice", op); got.status != http.StatusOK || got.body["state"] != "CANCELLED" {
		t.Fatalf("GET: %d %v, want CANCELLED", got.status, got.body)
	}
	again := e.cancel("alice", op)
	if again.status != http.StatusOK || again.body["result"] != "cancelled" || again.header.Get(gateway.HeaderReplayed) != "true" {
		t.Fatalf("second DELETE: %d %v, want the same cancelled, replayed", again.status, again.body)
	}
	logs := e.logs.String()
	if !strings.Contains(logs, `"outcome":"cancelled"`) {
		t.Errorf("no cancel decision logged (%d bytes):\n%s", len(logs), logs)
	}
	for _, secret := range []string{"pay-1", "order-1", "12.50"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the logs carry %q (a key or a body):\n%s", secret, logs)
		}
	}
}

// TestCancelAfterTheIrreversibleStageIsRefusedAndRunsOnce: once the demo
// captured (the stage the gateway recorded from its 102, or the finished
// record), a DELETE is 409 naming the stage, without asking the upstream;
// the task completes, charging once.
func TestCancelAfterTheIrreversibleStageIsRefusedAndRunsOnce(t *testing.T) {
	for _, finished := range []bool{false, true} {
		name := map[bool]string{false: "while charging", true: "after completion"}[finished]
		t.Run(name, func(t *testing.T) {
			e := newCancelEnv(t)
			gate := make(chan struct{})
			e.bankGate.Store(&gate)
			op := e.accepted("alice", "pay-1", "order-1")
			e.hold.BlockUntil(1)
			e.hold.Advance(cancelHold) // captured; the charge waits at the bank
			e.waitRecord("alice", op, func(rec store.Record) bool { return rec.LastStage == "captured" })
			if finished {
				close(gate)
				e.waitRecord("alice", op, func(rec store.Record) bool { return rec.State == idempotency.Completed })
			}
			r := e.cancel("alice", op)
			if r.status != http.StatusConflict || r.body["stage"] != "captured" ||
				!strings.HasSuffix(r.body["type"].(string), "/not-cancellable") {
				t.Fatalf("DELETE: %d %v, want 409 naming stage captured", r.status, r.body)
			}
			if n := e.upstreamCancels.Load(); n != 0 {
				t.Errorf("the upstream was asked %d times; the recorded stage decides", n)
			}
			if !finished {
				close(gate)
			}
			e.g.Close()
			if charges, rows := e.effects(op); charges != 1 || rows != 1 {
				t.Fatalf("%d charges, %d payments, want exactly one", charges, rows)
			}
			if rec := e.record("alice", op); rec.State != idempotency.Completed {
				t.Fatalf("record %s, want COMPLETED", rec.State)
			}
		})
	}
}

// TestCancelByAnotherActorIsNotFoundAndChangesNothing: bob's DELETE of
// alice's operation is the 404 bob's GET gets, the upstream is not asked,
// and alice's payment goes on to charge once.
func TestCancelByAnotherActorIsNotFoundAndChangesNothing(t *testing.T) {
	e := newCancelEnv(t)
	op := e.accepted("alice", "pay-1", "order-1")
	e.hold.BlockUntil(1)
	// The demo holds the payment once it reported "reserved"; the record
	// is settled in that state only when the gateway recorded the stage
	// (it may still be PENDING the moment the hold begins).
	before := e.waitRecord("alice", op, func(rec store.Record) bool {
		return rec.State == idempotency.InProgress && strings.HasPrefix(rec.LastStage, "reserved")
	})
	del, get := e.cancel("bob", op), e.status("bob", op)
	if del.status != http.StatusNotFound || get.status != http.StatusNotFound || del.body["type"] != get.body["type"] {
		t.Fatalf("bob: DELETE %d %v, GET %d %v, want the same 404", del.status, del.body, get.status, get.body)
	}
	if after := e.record("alice", op); after.State != before.State || after.Version < before.Version ||
		after.State == idempotency.Cancelled {
		t.Fatalf("record moved to %s by bob's DELETE", after.State)
	}
	if n := e.upstreamCancels.Load(); n != 0 {
		t.Errorf("the upstream was asked to cancel %d times", n)
	}
	e.hold.Advance(cancelHold)
	e.g.Close()
	if charges, rows := e.effects(op); charges != 1 || rows != 1 {
		t.Fatalf("%d charges, %d payments, want exactly one", charges, rows)
	}
	if rec := e.record("alice", op); rec.State != idempotency.Completed {
		t.Fatalf("record %s, want COMPLETED", rec.State)
	}
}

// TestCancelConfirmedUpstreamIsRecordedByTheWorker: the upstream
// confirmed a cancel whose DELETE never recorded it (the instance died
// between the two): the task's own answer carries the cancellation, the
// worker records CANCELLED, nothing is charged, and the DELETE's retry
// answers cancelled.
func TestCancelConfirmedUpstreamIsRecordedByTheWorker(t *testing.T) {
	e := newCancelEnv(t)
	op := e.accepted("alice", "pay-1", "order-1")
	e.hold.BlockUntil(1)
	// The upstream half of a DELETE, as the gateway sends it.
	req, _ := http.NewRequest(http.MethodPost, e.upstreamURL+"/internal/operations/"+op+"/cancel", nil)
	req.Header.Set(gateway.HeaderOperationID, op)
	req.Header.Set(gateway.HeaderActor, "t/alice")
	if r := e.do(req); r.status != http.StatusOK || r.header.Get(gateway.HeaderStage) != "cancelled" {
		t.Fatalf("upstream cancel: %d %v", r.status, r.header)
	}
	e.hold.Advance(cancelHold)
	rec := e.waitRecord("alice", op, func(rec store.Record) bool { return rec.State.Terminal() })
	if rec.State != idempotency.Cancelled {
		t.Fatalf("worker recorded %s, want CANCELLED", rec.State)
	}
	if charges, rows := e.effects(op); charges != 0 || rows != 0 {
		t.Fatalf("%d charges, %d payments, want none", charges, rows)
	}
	if r := e.cancel("alice", op); r.status != http.StatusOK || r.body["result"] != "cancelled" {
		t.Fatalf("DELETE retry: %d %v, want cancelled", r.status, r.body)
	}
}
