package payments_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/demo/bank"
	"github.com/idemcoord/idemcoord/demo/payments"
)

func TestPaymentChargesOnce(t *testing.T) {
	e := newEnv(t, payments.Options{})
	op := newOp()
	first := e.pay(t, op, order("order-1"))
	if first.status != http.StatusCreated {
		t.Fatalf("POST = %d %s, want 201", first.status, first.body)
	}
	got := receiptOf(t, first)
	want := payments.Receipt{PaymentID: got.PaymentID, Amount: "12.50", Currency: "EUR", Reference: "order-1",
		Status: "succeeded"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("receipt (-want +got):\n%s", diff)
	}
	if ct := first.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	loc := "/v1/payments/" + got.PaymentID.String()
	if l := first.header.Get("Location"); l != loc {
		t.Errorf("Location = %q, want %q", l, loc)
	}
	if n := e.charges(t, op); n != 1 {
		t.Errorf("bank charges = %d, want 1", n)
	}
	if p := e.find(t, op); p.Status != payments.StatusSucceeded || !p.ChargeID.Valid || p.Attempts != 1 {
		t.Errorf("payment row = %+v, want succeeded with a charge id after 1 attempt", p)
	}

	// The same operation again (a second execution): same answer, no charge.
	again := e.pay(t, op, order("order-1"))
	if again.status != http.StatusCreated || string(again.body) != string(first.body) ||
		again.header.Get("Location") != loc {
		t.Errorf("second execution = %d %s %v, want the first 201", again.status, again.body, again.header)
	}
	if n, m := e.charges(t, op), e.rows(t, op); n != 1 || m != 1 {
		t.Errorf("after a second execution: %d charges, %d payments; want 1 and 1", n, m)
	}

	c := e.payTS.Client()
	if a := send(t, c, "GET", e.payTS.URL+loc, "", "default/alice", nil); a.status != 200 ||
		string(a.body) != string(first.body) {
		t.Errorf("GET %s = %d %s", loc, a.status, a.body)
	}
	if a := send(t, c, "GET", e.payTS.URL+loc, "", "default/mallory", nil); a.status != http.StatusNotFound {
		t.Errorf("GET %s as another actor = %d, want 404", loc, a.status)
	}
}

// TestConcurrentSameOperation runs 16 executions of one operation at once,
// as a gateway takeover storm would.
func TestConcurrentSameOperation(t *testing.T) {
	for _, delay := range []time.Duration{0, 200 * time.Millisecond} {
		t.Run("bank delay "+delay.String(), func(t *testing.T) {
			e := newEnv(t, payments.Options{})
			if err := e.bank.SetFaults(bank.Faults{DelayBefore: delay}); err != nil {
				t.Fatal(err)
			}
			op := newOp()
			const n = 16
			answers := make([]answer, n)
			var start, done sync.WaitGroup
			start.Add(1)
			for i := range n {
				done.Add(1)
				go func() {
					defer done.Done()
					start.Wait()
					answers[i] = e.pay(t, op, order("order-c"))
				}()
			}
			start.Done()
			done.Wait()

			statuses := map[int]int{}
			ids := map[string]int{}
			for _, a := range answers {
				statuses[a.status]++
				switch a.status {
				case http.StatusCreated:
					ids[receiptOf(t, a).PaymentID.String()]++
				case http.StatusConflict:
					if a.header.Get("Retry-After") == "" || !strings.Contains(string(a.body), "in-progress") {
						t.Errorf("409 without Retry-After or in-progress type: %v %s", a.header, a.body)
					}
				default:
					t.Errorf("status %d %s, want 201 or 409", a.status, a.body)
				}
			}
			t.Logf("statuses %v", statuses)
			if len(ids) != 1 {
				t.Errorf("201s carried payment ids %v, want exactly one id", ids)
			}
			if c, r := e.charges(t, op), e.rows(t, op); c != 1 || r != 1 {
				t.Errorf("%d bank charges, %d payment rows; want 1 and 1", c, r)
			}
			after := e.pay(t, op, order("order-c"))
			if after.status != http.StatusCreated || ids[receiptOf(t, after).PaymentID.String()] == 0 {
				t.Errorf("later retry = %d %s, want 201 with the same payment id", after.status, after.body)
			}
		})
	}
}

func TestInvalidRequests(t *testing.T) {
	e := newEnv(t, payments.Options{})
	valid := `{"amount":"12.50","currency":"EUR","reference":"order-1"}`
	tests := []struct {
		name      string
		op, actor string
		body      string
		wantField string
	}{
		{"no operation id", "", "default/alice", valid, payments.HeaderOperationID},
		{"operation id not a uuid", "op-1", "default/alice", valid, payments.HeaderOperationID},
		{"no actor", newOp(), "", valid, payments.HeaderActor},
		{"not json", newOp(), "default/alice", `amount=1`, ""},
		{"two objects", newOp(), "default/alice", valid + valid, ""},
		{"no amount", newOp(), "default/alice", `{"currency":"EUR","reference":"r"}`, "amount"},
		{"amount a number", newOp(), "default/alice", `{"amount":12.5,"currency":"EUR","reference":"r"}`, "amount"},
		{"amount zero", newOp(), "default/alice", `{"amount":"0.00","currency":"EUR","reference":"r"}`, "amount"},
		{"amount negative", newOp(), "default/alice", `{"amount":"-5","currency":"EUR","reference":"r"}`, "amount"},
		{"amount three decimals", newOp(), "default/alice", `{"amount":"1.005","currency":"EUR","reference":"r"}`, "amount"},
		{"amount exponent", newOp(), "default/alice", `{"amount":"1e2","currency":"EUR","reference":"r"}`, "amount"},
		{"amount too large", newOp(), "default/alice", `{"amount":"12345678901234567","currency":"EUR","reference":"r"}`, "amount"},
		{"currency lower case", newOp(), "default/alice", `{"amount":"1","currency":"eur","reference":"r"}`, "currency"},
		{"currency missing", newOp(), "default/alice", `{"amount":"1","reference":"r"}`, "currency"},
		{"reference empty", newOp(), "default/alice", `{"amount":"1","currency":"EUR","reference":""}`, "reference"},
		{"reference too long", newOp(), "default/alice",
			`{"amount":"1","currency":"EUR","reference":"` + strings.Repeat("é", 129) + `"}`, "reference"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := send(t, e.payTS.Client(), "POST", e.payTS.URL+"/v1/payments", tt.op, tt.actor, tt.body)
			if a.status != http.StatusBadRequest || a.header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("= %d %q %s, want 400 problem+json", a.status, a.header.Get("Content-Type"), a.body)
			}
			var p struct{ Field, Detail string }
			if err := json.Unmarshal(a.body, &p); err != nil {
				t.Fatal(err)
			}
			if p.Field != tt.wantField {
				t.Errorf("field = %q, want %q (detail %q)", p.Field, tt.wantField, p.Detail)
			}
		})
	}
	var rows int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM payments`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	total, err := e.bank.Total(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rows != 0 || total != 0 {
		t.Errorf("after invalid requests: %d payments, %d charges; want none", rows, total)
	}
}

func TestOperationReusedForAnotherRequest(t *testing.T) {
	e := newEnv(t, payments.Options{})
	op := newOp()
	if a := e.pay(t, op, order("order-1")); a.status != http.StatusCreated {
		t.Fatalf("first = %d %s", a.status, a.body)
	}
	other := map[string]string{"amount": "99.00", "currency": "EUR", "reference": "order-1"}
	if a := e.pay(t, op, other); a.status != http.StatusUnprocessableEntity {
		t.Errorf("same operation, other amount = %d %s, want 422", a.status, a.body)
	}
	a := send(t, e.payTS.Client(), "POST", e.payTS.URL+"/v1/payments", op, "default/bob", order("order-1"))
	if a.status != http.StatusUnprocessableEntity {
		t.Errorf("same operation, other actor = %d %s, want 422", a.status, a.body)
	}
	if n := e.charges(t, op); n != 1 {
		t.Errorf("bank charges = %d, want 1", n)
	}
}

func TestListPayments(t *testing.T) {
	e := newEnv(t, payments.Options{})
	var want []string
	for _, ref := range []string{"a-1", "a-2", "a-3"} {
		a := e.pay(t, newOp(), order(ref))
		if a.status != http.StatusCreated {
			t.Fatalf("pay %s = %d %s", ref, a.status, a.body)
		}
		want = append([]string{ref}, want...) // newest first
	}
	send(t, e.payTS.Client(), "POST", e.payTS.URL+"/v1/payments", newOp(), "default/bob", order("b-1"))

	a := send(t, e.payTS.Client(), "GET", e.payTS.URL+"/v1/payments", "", "default/alice", nil)
	var got struct{ Payments []payments.ListItem }
	if err := json.Unmarshal(a.body, &got); err != nil || a.status != http.StatusOK {
		t.Fatalf("list = %d %s: %v", a.status, a.body, err)
	}
	var refs []string
	for _, p := range got.Payments {
		refs = append(refs, p.Reference)
		if p.Status != payments.StatusSucceeded || p.CreatedAt.IsZero() {
			t.Errorf("item %+v, want succeeded with created_at", p)
		}
	}
	if diff := cmp.Diff(want, refs); diff != "" {
		t.Errorf("alice's payments (-want +got):\n%s", diff)
	}
	if a := send(t, e.payTS.Client(), "GET", e.payTS.URL+"/v1/payments", "", "", nil); a.status != http.StatusBadRequest {
		t.Errorf("list without actor = %d, want 400", a.status)
	}
}

// TestCallerLeaves: a gateway that gives up does not leave the payment
// half-done; it runs to its end and the resolve endpoint sees it.
func TestCallerLeaves(t *testing.T) {
	e := newEnv(t, payments.Options{})
	if err := e.bank.SetFaults(bank.Faults{DelayBefore: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	op := newOp()
	impatient := &http.Client{Timeout: 50 * time.Millisecond}
	req, _ := http.NewRequest("POST", e.payTS.URL+"/v1/payments",
		strings.NewReader(`{"amount":"1.00","currency":"EUR","reference":"r"}`))
	req.Header.Set(payments.HeaderOperationID, op)
	req.Header.Set(payments.HeaderActor, "default/alice")
	if resp, err := impatient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the caller got %d before the bank answered", resp.StatusCode)
	}
	e.payTS.Close() // waits for the handler
	if p := e.find(t, op); p.Status != payments.StatusSucceeded {
		t.Errorf("status = %s, want succeeded", p.Status)
	}
	if n := e.charges(t, op); n != 1 {
		t.Errorf("bank charges = %d, want 1", n)
	}
}

func TestNewRejectsBadBankURL(t *testing.T) {
	for _, u := range []string{"", "bank:8080", "/charges", "ftp://bank"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%q) did not panic", u)
				}
			}()
			payments.New(nil, u, payments.Options{})
		}()
	}
}
