package bank_test

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/demo/bank"
)

// TestFaults drives each knob set from Go. The httptest server is closed
// (which waits for every handler) before counting, so a charge recorded
// late would still be seen.
func TestFaults(t *testing.T) {
	const patience = 300 * time.Millisecond // client timeout for the slow knobs
	tests := []struct {
		name         string
		faults       bank.Faults
		wantStatus   []int // one per request; 0: the client timed out
		wantCharges  int
		wantFailLeft int // FailNext still to serve afterwards
	}{
		{"fail next twice", bank.Faults{FailNext: 2, FailStatus: http.StatusBadGateway},
			[]int{502, 502, 201}, 1, 0},
		{"fail next default status", bank.Faults{FailNext: 1}, []int{503, 201}, 1, 0},
		{"delay before, caller waits", bank.Faults{DelayBefore: 50 * time.Millisecond}, []int{201}, 1, 0},
		{"delay before, caller leaves", bank.Faults{DelayBefore: time.Minute}, []int{0}, 0, 0},
		{"delay after, caller leaves", bank.Faults{DelayAfter: time.Minute}, []int{0, 0}, 2, 0},
		{"hang", bank.Faults{Hang: true, FailNext: 1}, []int{0, 0}, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, ts := newBank(t)
			if err := srv.SetFaults(tt.faults); err != nil {
				t.Fatal(err)
			}
			c := &http.Client{Timeout: patience}
			for i, want := range tt.wantStatus {
				status, body, err := do(c, "POST", ts.URL+"/charges", charge("op-f"))
				if want == 0 {
					var ne net.Error
					if !errors.As(err, &ne) || !ne.Timeout() {
						t.Fatalf("request %d: status %d err %v, want a client timeout", i, status, err)
					}
					continue
				}
				if err != nil || status != want {
					t.Fatalf("request %d: status %d err %v body %s, want %d", i, status, err, body, want)
				}
			}
			ts.Close()
			if got := count(t, srv, "op-f"); got != tt.wantCharges {
				t.Errorf("charges = %d, want %d", got, tt.wantCharges)
			}
			if got := srv.Faults().FailNext; got != tt.wantFailLeft {
				t.Errorf("FailNext left = %d, want %d", got, tt.wantFailLeft)
			}
		})
	}
}

func TestFaultsOverHTTP(t *testing.T) {
	srv, ts := newBank(t)
	c := ts.Client()
	status, body, err := do(c, "PUT", ts.URL+"/faults", json.RawMessage(`{"fail_next":1,"fail_status":429,"delay_before":"1ms"}`))
	if err != nil || status != http.StatusOK {
		t.Fatalf("PUT /faults: %d %v %s", status, err, body)
	}
	want := bank.Faults{FailNext: 1, FailStatus: 429, DelayBefore: time.Millisecond}
	if diff := cmp.Diff(want, srv.Faults()); diff != "" {
		t.Errorf("Faults() after PUT (-want +got):\n%s", diff)
	}
	if status, _, _ := do(c, "POST", ts.URL+"/charges", charge("op-h")); status != http.StatusTooManyRequests {
		t.Errorf("first charge = %d, want 429", status)
	}
	if status, _, _ := do(c, "POST", ts.URL+"/charges", charge("op-h")); status != http.StatusCreated {
		t.Errorf("second charge = %d, want 201", status)
	}
	_, body, _ = do(c, "GET", ts.URL+"/faults", nil)
	var got bank.Faults
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("GET /faults %s: %v", body, err)
	}
	want.FailNext = 0
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GET /faults after the failure was served (-want +got):\n%s", diff)
	}
	if n := count(t, srv, "op-h"); n != 1 {
		t.Errorf("charges = %d, want 1", n)
	}

	for _, bad := range []string{`{"fail_nxt":1}`, `{"delay_after":"soon"}`, `{"delay_before":"-1s"}`,
		`{"fail_next":1,"fail_status":200}`, `[]`} {
		status, body, _ := do(c, "PUT", ts.URL+"/faults", json.RawMessage(bad))
		if status != http.StatusBadRequest {
			t.Errorf("PUT /faults %s = %d %s, want 400", bad, status, body)
		}
	}
	if diff := cmp.Diff(want, srv.Faults()); diff != "" {
		t.Errorf("an invalid PUT changed the knobs (-want +got):\n%s", diff)
	}
	if status, _, _ := do(c, "PUT", ts.URL+"/faults", json.RawMessage(`{}`)); status != http.StatusOK {
		t.Errorf("clearing faults = %d", status)
	}
	if diff := cmp.Diff(bank.Faults{FailStatus: bank.DefaultFailStatus}, srv.Faults()); diff != "" {
		t.Errorf("after clearing (-want +got):\n%s", diff)
	}
}
