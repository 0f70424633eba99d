package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/store"
)

// TestTakeoverOfACancelledTaskRecordsTheCancellation: an instance claimed
// a held payment and sent it, the upstream then confirmed a cancel, and
// both the worker and the DELETE died before recording anything. Once
// the lease has run out, the client's retry takes the operation over;
// the takeover asks the resolve path first, learns of the cancellation,
// and records CANCELLED: the task never runs again and nothing is
// charged; the next retry replays the cancellation.
func TestTakeoverOfACancelledTaskRecordsTheCancellation(t *testing.T) {
	ctx := context.Background()
	e := newCancelEnv(t)
	body := `{"amount":"12.50","currency":"EUR","reference":"order-1"}`
	policy := e.endpoint.Policy()
	fp, err := idempotency.ComputeFingerprint(idempotency.Request{Method: http.MethodPost, Path: "/v1/held-payments",
		ContentType: "application/json", Body: []byte(body)}, policy.Fingerprint)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := idempotency.ParseKeyHeader("pay-1")
	shard := shard.Of("t/alice", shard.DefaultCount)
	epoch, owner, err := e.store.Fence(ctx, shard)
	if err != nil {
		t.Fatal(err)
	}
	dead, err := e.store.Begin(ctx, store.ClaimRequest{Scope: store.Scope{Actor: "t/alice", Endpoint: e.endpoint.Name, Key: key},
		Fingerprint: fp, Token: fencing.Token{Shard: shard, Epoch: epoch, Region: owner}, Worker: "dead",
		Lease: policy.Lease, TTL: policy.TTL, Pending: true})
	if err != nil || dead.Outcome != store.FirstRun {
		t.Fatalf("dead instance's claim: %v %v", dead.Outcome, err)
	}
	op := dead.Lease.OperationID.String()
	upstream := func(path string, body string) *http.Request {
		req, _ := http.NewRequest(http.MethodPost, e.upstreamURL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(gateway.HeaderOperationID, op)
		req.Header.Set(gateway.HeaderActor, "t/alice")
		return req
	}
	sent := make(chan reply, 1)
	go func() { sent <- e.do(upstream("/v1/held-payments", body)) }() // the dead worker's send
	e.hold.BlockUntil(1)
	if r := e.do(upstream("/internal/operations/"+op+"/cancel", "")); r.status != http.StatusOK {
		t.Fatalf("upstream cancel: %d %v", r.status, r.body) // the dead DELETE's upstream half
	}
	e.hold.Advance(cancelHold)
	if r := <-sent; r.header.Get(gateway.HeaderStage) != "cancelled" {
		t.Fatalf("the dead worker's answer: %d %v, want the cancellation", r.status, r.header)
	}
	e.leases.Advance(2 * policy.Lease) // the dead instance's lease runs out
	if retry := e.accepted("alice", "pay-1", "order-1"); retry != op {
		t.Fatalf("retry got operation %s, want %s", retry, op)
	}
	rec := e.waitRecord("alice", op, func(rec store.Record) bool { return rec.State.Terminal() })
	if rec.State != idempotency.Cancelled {
		t.Fatalf("the takeover recorded %s, want CANCELLED", rec.State)
	}
	e.g.Close()
	if charges, rows := e.effects(op); charges != 0 || rows != 0 {
		t.Fatalf("%d charges, %d payments, want none", charges, rows)
	}
	if r := e.pay("alice", "pay-1", "order-1"); r.status != http.StatusConflict || r.header.Get(gateway.HeaderReplayed) != "true" {
		t.Fatalf("second retry: %d %v, want the replayed cancellation", r.status, r.body)
	}
}
