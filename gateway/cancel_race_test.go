package gateway_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// TestCancelRacingTheCaptureNeverBothCancelsAndCharges: DELETEs race the
// captures of held payments (the demo's clock released while the cancels
// are in flight). Whichever wins, an operation is either cancelled (200,
// CANCELLED, nothing charged) or refused (409 naming the stage, COMPLETED,
// charged once): never a "cancelled" answer with a charge, never two
// charges.
func TestCancelRacingTheCaptureNeverBothCancelsAndCharges(t *testing.T) {
	const ops = 8
	e := newCancelEnv(t)
	ids := make([]string, ops)
	for i := range ids {
		ids[i] = e.accepted("alice", fmt.Sprintf("pay-%d", i), fmt.Sprintf("order-%d", i))
	}
	e.hold.BlockUntil(ops)
	answers := make([]reply, ops)
	first := make(chan struct{}, ops)
	var wg sync.WaitGroup
	for i, op := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = e.cancel("alice", op)
			first <- struct{}{}
		}()
	}
	<-first // one cancel has been decided; the others race the captures
	e.hold.Advance(cancelHold)
	wg.Wait()
	e.g.Close()
	cancelled := 0
	for i, op := range ids {
		a := answers[i]
		charges, rows := e.effects(op)
		rec := e.record("alice", op)
		switch a.status {
		case http.StatusOK:
			cancelled++
			if a.body["result"] != "cancelled" || charges != 0 || rows != 0 || rec.State != idempotency.Cancelled {
				t.Errorf("%s: answered %v, then %d charges, %d payments, record %s", op, a.body, charges, rows, rec.State)
			}
		case http.StatusConflict:
			if a.body["stage"] != "captured" || charges != 1 || rows != 1 || rec.State != idempotency.Completed {
				t.Errorf("%s: refused %v, then %d charges, %d payments, record %s", op, a.body, charges, rows, rec.State)
			}
		default:
			t.Errorf("%s: DELETE %d %v, want 200 or 409", op, a.status, a.body)
		}
	}
	t.Logf("%d of %d cancelled, %d captured first", cancelled, ops, ops-cancelled)
}

// TestDroppedPostConnectionNeverCancels: a client that hangs up on its
// POST (at once, or while the upstream runs the task) cancels nothing:
// the task runs to its end and charges once, and the client's retry with
// the same key gets the same task, not a second one.
func TestDroppedPostConnectionNeverCancels(t *testing.T) {
	for _, whileRunning := range []bool{false, true} {
		t.Run(map[bool]string{false: "at once", true: "while the upstream runs"}[whileRunning], func(t *testing.T) {
			e := newCancelEnv(t)
			conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			body := `{"amount":"12.50","currency":"EUR","reference":"order-1"}`
			fmt.Fprintf(conn, "POST /v1/held-payments HTTP/1.1\r\nHost: gateway\r\nAuthorization: %s\r\n"+
				"Idempotency-Key: pay-1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
				token(t, "alice"), len(body), body)
			if !whileRunning {
				conn.Close()
			}
			held := make(chan struct{})
			go func() { e.hold.BlockUntil(1); close(held) }()
			select {
			case <-held:
			case <-time.After(20 * time.Second): // a guard against a hang, not a timing assertion
				t.Fatal("the task never reached the upstream")
			}
			if whileRunning {
				conn.Close()
			}
			e.hold.Advance(cancelHold)
			key, _ := idempotency.ParseKeyHeader("pay-1")
			sc := store.Scope{Actor: "t/alice", Endpoint: "create-payment", Key: key}
			if st := waitState(t, e.store, sc, idempotency.Completed, 20*time.Second); st != idempotency.Completed {
				t.Fatalf("record %s, want COMPLETED", st)
			}
			rec, err := e.store.Read(context.Background(), sc)
			if err != nil {
				t.Fatal(err)
			}
			op := rec.OperationID.String()
			if retry := e.accepted("alice", "pay-1", "order-1"); retry != op {
				t.Fatalf("the retry got operation %s, want the same %s", retry, op)
			}
			e.g.Close()
			if charges, rows := e.effects(op); charges != 1 || rows != 1 {
				t.Fatalf("%d charges, %d payments, want exactly one", charges, rows)
			}
		})
	}
}
