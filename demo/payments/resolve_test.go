package payments_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/demo/bank"
	"github.com/idemcoord/idemcoord/demo/payments"
	"github.com/idemcoord/idemcoord/internal/testutil"
)

// shortWait is the bank timeout of tests that make the bank's answer late:
// long enough for the bank to record a charge, short enough for a test.
const shortWait = 500 * time.Millisecond

func resolutionOf(t *testing.T, a answer) payments.Resolution {
	t.Helper()
	if a.status != http.StatusOK || a.header.Get("Content-Type") != "application/json" {
		t.Fatalf("resolve = %d %q %s, want 200 application/json", a.status, a.header.Get("Content-Type"), a.body)
	}
	var r payments.Resolution
	if err := json.Unmarshal(a.body, &r); err != nil {
		t.Fatalf("resolution %s: %v", a.body, err)
	}
	return r
}

// wantResolution checks a resolution against the 201 a retry now answers.
func wantResolution(t *testing.T, e *env, op string, got payments.Resolution) {
	t.Helper()
	replay := e.pay(t, op, order("order-r"))
	if replay.status != http.StatusCreated {
		t.Fatalf("replay = %d %s, want 201", replay.status, replay.body)
	}
	want := payments.Resolution{Status: 201, Body: receiptOf(t, replay), Headers: map[string][]string{
		"Content-Type": {"application/json"}, "Location": {replay.header.Get("Location")}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resolution (-want +got):\n%s", diff)
	}
	if got.Body.Status != payments.StatusSucceeded {
		t.Errorf("resolved body status = %q", got.Body.Status)
	}
}

func TestResolveNeverRan(t *testing.T) {
	e := newEnv(t, payments.Options{})
	if a := e.resolve(t, newOp()); a.status != http.StatusNotFound {
		t.Errorf("resolve of an unknown operation = %d %s, want 404", a.status, a.body)
	}
	if a := e.resolve(t, "not-a-uuid"); a.status != http.StatusBadRequest {
		t.Errorf("resolve of a bad id = %d, want 400", a.status)
	}
}

func TestResolveSucceeded(t *testing.T) {
	e := newEnv(t, payments.Options{})
	op := newOp()
	if a := e.pay(t, op, order("order-r")); a.status != http.StatusCreated {
		t.Fatalf("pay = %d %s", a.status, a.body)
	}
	wantResolution(t, e, op, resolutionOf(t, e.resolve(t, op)))
	if n := e.charges(t, op); n != 1 {
		t.Errorf("bank charges = %d, want 1", n)
	}
	// Another actor, or a caller naming none, never sees the receipt.
	if a := e.resolveAs(t, op, "default/mallory"); a.status != http.StatusForbidden {
		t.Fatalf("another actor's resolve = %d %s, want 403", a.status, a.body)
	}
	if a := e.resolveAs(t, op, ""); a.status != http.StatusBadRequest {
		t.Fatalf("resolve without an actor = %d %s, want 400", a.status, a.body)
	}
}

// TestResolvePendingCharged: the bank records the charge but answers after
// the payments service gave up (504, row pending). Resolve, or a second
// execution, asks the bank, settles the row and answers what the payment
// would have answered, without a second charge.
func TestResolvePendingCharged(t *testing.T) {
	for _, via := range []string{"resolve", "retry"} {
		t.Run(via, func(t *testing.T) {
			e := newEnv(t, payments.Options{BankTimeout: shortWait})
			if err := e.bank.SetFaults(bank.Faults{DelayAfter: time.Minute}); err != nil {
				t.Fatal(err)
			}
			op := newOp()
			if a := e.pay(t, op, order("order-r")); a.status != http.StatusGatewayTimeout {
				t.Fatalf("pay = %d %s, want 504", a.status, a.body)
			}
			if p := e.find(t, op); p.Status != payments.StatusPending {
				t.Fatalf("status after a bank timeout = %s, want pending", p.Status)
			}
			if n := e.charges(t, op); n != 1 {
				t.Fatalf("bank charges = %d, want 1 (DelayAfter records first)", n)
			}
			if err := e.bank.SetFaults(bank.Faults{}); err != nil {
				t.Fatal(err)
			}
			if via == "resolve" {
				wantResolution(t, e, op, resolutionOf(t, e.resolve(t, op)))
			} else if a := e.pay(t, op, order("order-r")); a.status != http.StatusCreated ||
				receiptOf(t, a).PaymentID != e.find(t, op).ID {
				t.Fatalf("retry = %d %s, want 201 for the pending payment", a.status, a.body)
			}
			if p := e.find(t, op); p.Status != payments.StatusSucceeded || !p.ChargeID.Valid || p.Attempts != 1 {
				t.Errorf("row = %+v, want succeeded with the bank's charge id, 1 attempt", p)
			}
			if n := e.charges(t, op); n != 1 {
				t.Errorf("bank charges = %d, want still 1", n)
			}
		})
	}
}

// TestResolvePendingNotCharged: the bank hangs, so the outcome is unknown
// and stays unknown (409) until the bank has a charge: nothing is gambled.
func TestResolvePendingNotCharged(t *testing.T) {
	e := newEnv(t, payments.Options{BankTimeout: shortWait})
	if err := e.bank.SetFaults(bank.Faults{Hang: true}); err != nil {
		t.Fatal(err)
	}
	op := newOp()
	if a := e.pay(t, op, order("order-r")); a.status != http.StatusGatewayTimeout {
		t.Fatalf("pay = %d %s, want 504", a.status, a.body)
	}
	if err := e.bank.SetFaults(bank.Faults{}); err != nil {
		t.Fatal(err)
	}
	if a := e.resolve(t, op); a.status != http.StatusConflict || a.header.Get("Retry-After") == "" {
		t.Errorf("resolve = %d %v %s, want 409 with Retry-After", a.status, a.header, a.body)
	}
	if a := e.pay(t, op, order("order-r")); a.status != http.StatusConflict {
		t.Errorf("retry of a pending payment = %d %s, want 409", a.status, a.body)
	}
	if n, p := e.charges(t, op), e.find(t, op); n != 0 || p.Status != payments.StatusPending {
		t.Fatalf("%d charges, status %s; want 0 and pending", n, p.Status)
	}

	// The original's charge lands after all (as a late request would).
	late := bank.ChargeRequest{OperationID: op, Actor: "default/alice", Amount: "12.50", Currency: "EUR"}
	if a := send(t, e.bankTS.Client(), "POST", e.bankTS.URL+"/charges", "", "", late); a.status != 201 {
		t.Fatalf("late charge = %d %s", a.status, a.body)
	}
	wantResolution(t, e, op, resolutionOf(t, e.resolve(t, op)))
	if n := e.charges(t, op); n != 1 {
		t.Errorf("bank charges = %d, want 1", n)
	}
}

// TestBankRefusal: a refused charge marks the payment failed (502); resolve
// answers 404 (provably not charged) and the next execution charges again.
func TestBankRefusal(t *testing.T) {
	e := newEnv(t, payments.Options{})
	if err := e.bank.SetFaults(bank.Faults{FailNext: 1, FailStatus: http.StatusServiceUnavailable}); err != nil {
		t.Fatal(err)
	}
	op := newOp()
	if a := e.pay(t, op, order("order-r")); a.status != http.StatusBadGateway {
		t.Fatalf("pay = %d %s, want 502", a.status, a.body)
	}
	if p, n := e.find(t, op), e.charges(t, op); p.Status != payments.StatusFailed || n != 0 {
		t.Fatalf("status %s, %d charges; want failed and 0", p.Status, n)
	}
	if a := e.resolve(t, op); a.status != http.StatusNotFound {
		t.Errorf("resolve of a failed, uncharged payment = %d %s, want 404", a.status, a.body)
	}
	first := e.pay(t, op, order("order-r"))
	if first.status != http.StatusCreated {
		t.Fatalf("retry = %d %s, want 201", first.status, first.body)
	}
	if p, n := e.find(t, op), e.charges(t, op); p.Status != payments.StatusSucceeded || p.Attempts != 2 || n != 1 {
		t.Errorf("after the retry: %+v, %d charges; want succeeded, attempt 2, 1 charge", p, n)
	}
	wantResolution(t, e, op, resolutionOf(t, e.resolve(t, op)))
}

// TestFailedButCharged: a failed payment whose charge exists at the bank
// (a 5xx that hid a commit) is settled from the bank's record, never
// charged twice, by both a retry and the resolve endpoint.
func TestFailedButCharged(t *testing.T) {
	for _, via := range []string{"retry", "resolve"} {
		t.Run(via, func(t *testing.T) {
			e := newEnv(t, payments.Options{})
			e.bank.SetFaults(bank.Faults{FailNext: 1})
			op := newOp()
			if a := e.pay(t, op, order("order-r")); a.status != http.StatusBadGateway {
				t.Fatalf("pay = %d %s, want 502", a.status, a.body)
			}
			hidden := bank.ChargeRequest{OperationID: op, Actor: "default/alice", Amount: "12.50", Currency: "EUR"}
			if a := send(t, e.bankTS.Client(), "POST", e.bankTS.URL+"/charges", "", "", hidden); a.status != 201 {
				t.Fatalf("hidden charge = %d", a.status)
			}
			if via == "resolve" {
				wantResolution(t, e, op, resolutionOf(t, e.resolve(t, op)))
			} else if a := e.pay(t, op, order("order-r")); a.status != http.StatusCreated {
				t.Fatalf("retry = %d %s, want 201", a.status, a.body)
			}
			if p, n := e.find(t, op), e.charges(t, op); p.Status != payments.StatusSucceeded || n != 1 {
				t.Errorf("status %s, %d charges; want succeeded and 1", p.Status, n)
			}
		})
	}
}

// TestBankUnreachable: a refused connection proves the charge never left:
// failed and 502; once the bank is back, a retry charges exactly once.
func TestBankUnreachable(t *testing.T) {
	e := newEnv(t, payments.Options{})
	dead := "http://" + testutil.RefusingAddr(t)
	offline := payments.New(e.pool, dead, payments.Options{BankTimeout: shortWait})
	op := newOp()
	rec := send(t, http.DefaultClient, "POST", serve(t, offline)+"/v1/payments", op, "default/alice", order("order-r"))
	if rec.status != http.StatusBadGateway {
		t.Fatalf("pay with the bank down = %d %s, want 502", rec.status, rec.body)
	}
	if p := e.find(t, op); p.Status != payments.StatusFailed {
		t.Fatalf("status = %s, want failed", p.Status)
	}
	if a := e.pay(t, op, order("order-r")); a.status != http.StatusCreated {
		t.Fatalf("retry with the bank up = %d %s, want 201", a.status, a.body)
	}
	if n := e.charges(t, op); n != 1 {
		t.Errorf("bank charges = %d, want 1", n)
	}
}
