package payments_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/demo/payments"
)

const hold = time.Minute

// held posts a held payment for op as alice in the background; the
// answer and the stages its 102s reported arrive on the channel.
func (e *env) held(t *testing.T, op string) <-chan heldAnswer {
	t.Helper()
	out := make(chan heldAnswer, 1)
	b, _ := json.Marshal(order("ref-" + op[:8]))
	req, err := http.NewRequest(http.MethodPost, e.payTS.URL+"/v1/held-payments", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(payments.HeaderOperationID, op)
	req.Header.Set(payments.HeaderActor, "default/alice")
	var mu sync.Mutex
	var stages []string
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		Got1xxResponse: func(_ int, h textproto.MIMEHeader) error {
			mu.Lock()
			defer mu.Unlock()
			stages = append(stages, h.Get(payments.HeaderStage))
			return nil
		}}))
	go func() {
		resp, err := e.payTS.Client().Do(req)
		if err != nil {
			out <- heldAnswer{err: err}
			return
		}
		resp.Body.Close()
		mu.Lock()
		defer mu.Unlock()
		out <- heldAnswer{status: resp.StatusCode, stage: resp.Header.Get(payments.HeaderStage), stages: stages}
	}()
	return out
}

type heldAnswer struct {
	status int
	stage  string
	stages []string
	err    error
}

func (e *env) cancelAs(t *testing.T, op, actor string) answer {
	t.Helper()
	return send(t, e.payTS.Client(), "POST", e.payTS.URL+"/internal/operations/"+op+"/cancel", "", actor, nil)
}

// TestHeldPaymentCancelledOrCapturedNeverBoth: a held payment reports
// reserved (reversible) then captured in 102s. Cancelled while reserved,
// it answers cancelled, never charges, and resolves to the cancellation;
// captured first, the cancel is refused naming the stage and it charges
// once. A cancel is idempotent, and another actor's is refused.
func TestHeldPaymentCancelledOrCapturedNeverBoth(t *testing.T) {
	for _, cancelFirst := range []bool{true, false} {
		t.Run(map[bool]string{true: "cancel while reserved", false: "cancel after capture"}[cancelFirst], func(t *testing.T) {
			fake := clock.NewFake(time.Unix(1_700_000_000, 0))
			e := newEnv(t, payments.Options{Hold: hold, Clock: fake})
			t.Cleanup(func() { fake.Advance(24 * time.Hour) })
			op := newOp()
			done := e.held(t, op)
			fake.BlockUntil(1)
			if a := e.cancelAs(t, op, "default/bob"); a.status != http.StatusForbidden {
				t.Fatalf("bob's cancel: %d %s, want 403", a.status, a.body)
			}
			var first answer
			if cancelFirst {
				first = e.cancelAs(t, op, "default/alice")
			}
			fake.Advance(hold)
			got := <-done
			if got.err != nil {
				t.Fatal(got.err)
			}
			if !cancelFirst {
				first = e.cancelAs(t, op, "default/alice")
			}
			again := e.cancelAs(t, op, "default/alice")
			want, wantStatus, wantCharges := "cancelled", http.StatusConflict, 0
			wantStages := []string{"reserved;reversible"}
			if !cancelFirst {
				want, wantStatus, wantCharges = "captured", http.StatusCreated, 1
				wantStages = append(wantStages, "captured")
			}
			if got.status != wantStatus || got.stage != want || !slices.Equal(got.stages, wantStages) {
				t.Errorf("payment: %d stage %q, 102 stages %q; want %d %q %q", got.status, got.stage, got.stages,
					wantStatus, want, wantStages)
			}
			for _, a := range []answer{first, again} {
				if a.header.Get(payments.HeaderStage) != want {
					t.Errorf("cancel: %d stage %q, want %q", a.status, a.header.Get(payments.HeaderStage), want)
				}
			}
			if n := e.charges(t, op); n != wantCharges {
				t.Errorf("%d charges, want %d", n, wantCharges)
			}
			if cancelFirst {
				r := e.resolve(t, op)
				var res struct {
					Status  int                 `json:"status"`
					Headers map[string][]string `json:"headers"`
				}
				json.Unmarshal(r.body, &res)
				if r.status != http.StatusOK || res.Status != http.StatusConflict || res.Headers[payments.HeaderStage][0] != "cancelled" {
					t.Errorf("resolve: %d %s, want the cancellation", r.status, r.body)
				}
			}
		})
	}
}

// TestCancelBeforeTheOperationArrivesStopsIt: a cancel of an operation the
// service has not seen yet leaves a marker; the execution that arrives
// later stops at it and charges nothing.
func TestCancelBeforeTheOperationArrivesStopsIt(t *testing.T) {
	e := newEnv(t, payments.Options{})
	op := newOp()
	if a := e.cancelAs(t, op, "default/alice"); a.status != http.StatusOK {
		t.Fatalf("cancel: %d %s", a.status, a.body)
	}
	if a := e.pay(t, op, order("late")); a.status != http.StatusConflict || a.header.Get(payments.HeaderStage) != "cancelled" {
		t.Fatalf("late execution: %d %s, want the cancellation", a.status, a.body)
	}
	if n, rows := e.charges(t, op), e.rows(t, op); n != 0 || rows != 0 {
		t.Fatalf("%d charges, %d payments, want none", n, rows)
	}
}
