package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/gateway"
)

// mismatchProblem is the part of a 422 these tests read.
type mismatchProblem struct {
	Type           string `json:"type"`
	Detail         string `json:"detail"`
	OperationID    string `json:"operation_id"`
	OperationState string `json:"operation_state"`
	NewKeySafe     bool   `json:"new_key_safe"`
}

// TestAMismatchNamesTheOperationTheKeyBelongsTo: a 422 is about an
// operation that exists, so, like a 409, it carries that operation's id
// and state (README, "Errors ... those about an operation that exists
// ... 422 mismatch ... also carry its operation_id and operation_state"),
// and the upstream ran once.
func TestAMismatchNamesTheOperationTheKeyBelongsTo(t *testing.T) {
	var runs atomic.Int64
	srv := serveWrapped(t, openStore(t, 4), "", countingHandler(&runs))
	alice := token(t, "alice")
	st, hd, b := do(t, post(t, srv.URL+"/v1/things", alice, "mm-1", `{"amount":5}`))
	if st != http.StatusCreated {
		t.Fatalf("first run: %d %s", st, b)
	}
	opID := hd.Get(gateway.HeaderOperationID)
	st, hd, b = do(t, post(t, srv.URL+"/v1/things", alice, "mm-1", `{"amount":6}`))
	if st != http.StatusUnprocessableEntity {
		t.Fatalf("different body: %d %s, want 422", st, b)
	}
	var p mismatchProblem
	if err := json.Unmarshal([]byte(b), &p); err != nil {
		t.Fatal(err)
	}
	if p.OperationID != opID || p.OperationState != "COMPLETED" || !p.NewKeySafe {
		t.Errorf("422 %s: want operation_id %s, operation_state COMPLETED, new_key_safe true", b, opID)
	}
	if got := hd.Get(gateway.HeaderOperationID); got != opID {
		t.Errorf("422 %s header %q, want %q", gateway.HeaderOperationID, got, opID)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("upstream ran %d times, want 1", n)
	}
}

// TestAFirstSentMismatchSaysTheFirstSentTimeDiffers: a retry whose body is
// the same but whose Idempotency-First-Sent is not the first attempt's is
// 422 (the contract's "First-sent guard"), and its detail names the header
// and both times, so a client that re-stamped its retry can see why.
func TestAFirstSentMismatchSaysTheFirstSentTimeDiffers(t *testing.T) {
	var runs atomic.Int64
	srv := serveWrapped(t, openStore(t, 4), "", countingHandler(&runs))
	alice := token(t, "alice")
	first := time.Now().Add(-time.Minute).Truncate(time.Second)
	st, _, b := do(t, firstSentPost(t, srv.URL, alice, "mm-2", httpDate(first)))
	if st != http.StatusCreated {
		t.Fatalf("first run: %d %s", st, b)
	}
	later := first.Add(30 * time.Second)
	st, _, b = do(t, firstSentPost(t, srv.URL, alice, "mm-2", httpDate(later)))
	if st != http.StatusUnprocessableEntity {
		t.Fatalf("re-stamped retry: %d %s, want 422", st, b)
	}
	var p mismatchProblem
	if err := json.Unmarshal([]byte(b), &p); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{gateway.HeaderFirstSent, httpDate(first), httpDate(later)} {
		if !strings.Contains(p.Detail, want) {
			t.Errorf("422 detail %q does not name %q", p.Detail, want)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("upstream ran %d times, want 1", n)
	}
}
