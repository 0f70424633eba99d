package bank_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/demo/bank"
)

func TestChargeKeepsDuplicates(t *testing.T) {
	srv, ts := newBank(t)
	c := ts.Client()
	ids := map[string]bool{}
	for i := 0; i < 2; i++ {
		status, body, err := do(c, "POST", ts.URL+"/charges", charge("op-1"))
		if err != nil || status != http.StatusCreated {
			t.Fatalf("charge %d: status %d, err %v, body %s", i, status, err, body)
		}
		var got struct {
			ChargeID string `json:"charge_id"`
		}
		if err := json.Unmarshal(body, &got); err != nil || got.ChargeID == "" {
			t.Fatalf("charge %d: body %s: %v", i, body, err)
		}
		ids[got.ChargeID] = true
	}
	if len(ids) != 2 {
		t.Errorf("charge ids %v, want two distinct", ids)
	}
	if got := count(t, srv, "op-1"); got != 2 {
		t.Errorf("Count(op-1) = %d, want 2: duplicates must stay visible", got)
	}

	status, body, err := do(c, "GET", ts.URL+"/charges?operation_id=op-1", nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("GET charges: %d %v %s", status, err, body)
	}
	var resp bank.ChargesResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	if !resp.Charged || len(resp.Charges) != 2 {
		t.Fatalf("GET charges = %s, want charged with 2 charges", body)
	}
	for _, ch := range resp.Charges {
		want := bank.Charge{ChargeID: ch.ChargeID, OperationID: "op-1", Actor: "default/alice",
			Amount: "12.50", Currency: "EUR", CreatedAt: ch.CreatedAt}
		if diff := cmp.Diff(want, ch); diff != "" {
			t.Errorf("charge (-want +got):\n%s", diff)
		}
	}

	status, body, _ = do(c, "GET", ts.URL+"/charges?operation_id=never", nil)
	if status != http.StatusOK || strings.TrimSpace(string(body)) != `{"charged":false,"charges":[]}` {
		t.Errorf("GET charges for an unknown operation = %d %s", status, body)
	}
	if status, _, _ := do(c, "GET", ts.URL+"/charges", nil); status != http.StatusBadRequest {
		t.Errorf("GET charges without operation_id = %d, want 400", status)
	}
	if got := total(t, srv); got != 2 {
		t.Errorf("Total = %d, want 2", got)
	}
}

func TestChargeValidation(t *testing.T) {
	srv, ts := newBank(t)
	tests := []struct {
		name      string
		body      any
		wantField string
	}{
		{"no operation", bank.ChargeRequest{Actor: "a", Amount: "1", Currency: "EUR"}, "operation_id"},
		{"no actor", bank.ChargeRequest{OperationID: "op", Amount: "1", Currency: "EUR"}, "actor"},
		{"zero amount", bank.ChargeRequest{OperationID: "op", Actor: "a", Amount: "0", Currency: "EUR"}, "amount"},
		{"float amount", map[string]any{"operation_id": "op", "actor": "a", "amount": 1.5, "currency": "EUR"}, ""},
		{"bad currency", bank.ChargeRequest{OperationID: "op", Actor: "a", Amount: "1", Currency: "eur"}, "currency"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body, err := do(ts.Client(), "POST", ts.URL+"/charges", tt.body)
			if err != nil || status != http.StatusBadRequest {
				t.Fatalf("status %d err %v body %s, want 400", status, err, body)
			}
			var p struct{ Field string }
			json.Unmarshal(body, &p)
			if p.Field != tt.wantField {
				t.Errorf("field = %q, want %q (body %s)", p.Field, tt.wantField, body)
			}
		})
	}
	if got := total(t, srv); got != 0 {
		t.Errorf("Total = %d after invalid charges, want 0", got)
	}
}
