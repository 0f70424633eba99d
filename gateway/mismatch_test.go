package gateway_test

import (
	"encoding/json"
	"io"
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

// TestA422NeverSaysANewKeyIsSafeForTheRequestThatRan: a retry that is the
// key's own request (same body) but names another Idempotency-First-Sent
// is 422, and since that request ran, sending it under a new key would run
// it twice: new_key_safe is false. A 422 for another body, or for the same
// request whose attempt was recorded as having taken no effect (a
// retryable failure), still says a new key is safe.
func TestA422NeverSaysANewKeyIsSafeForTheRequestThatRan(t *testing.T) {
	var runs atomic.Int64
	srv := serveWrapped(t, openStore(t, 4), "", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), `"amount":7`) {
			w.WriteHeader(http.StatusServiceUnavailable) // retryable: took no effect
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	alice := token(t, "alice")
	first := time.Now().Add(-time.Minute).Truncate(time.Second)
	later := httpDate(first.Add(30 * time.Second))
	for _, key := range []string{"nks-ran", "nks-other"} {
		if st, hd, b := do(t, firstSentPost(t, srv.URL, alice, key, httpDate(first))); st != http.StatusCreated {
			t.Fatalf("first run of %s: %s", key, describe(st, hd, b))
		}
	}
	r := post(t, srv.URL+"/v1/things", alice, "nks-failed", `{"amount":7}`)
	r.Header.Set(gateway.HeaderFirstSent, httpDate(first))
	if st, hd, b := do(t, r); st != http.StatusServiceUnavailable {
		t.Fatalf("retryable first attempt: %s, want 503", describe(st, hd, b))
	}
	for _, tc := range []struct {
		name, key, body string
		safe            bool
	}{
		{"the request that ran, re-stamped", "nks-ran", `{"amount":5}`, false},
		{"another body", "nks-other", `{"amount":6}`, true},
		{"the request whose attempt took no effect, re-stamped", "nks-failed", `{"amount":7}`, true},
	} {
		r := post(t, srv.URL+"/v1/things", alice, tc.key, tc.body)
		r.Header.Set(gateway.HeaderFirstSent, later)
		st, _, b := do(t, r)
		var p mismatchProblem
		if err := json.Unmarshal([]byte(b), &p); err != nil || st != http.StatusUnprocessableEntity {
			t.Fatalf("%s: %d %s, want 422", tc.name, st, b)
		}
		if p.NewKeySafe != tc.safe {
			t.Errorf("%s: new_key_safe %v, want %v (%s)", tc.name, p.NewKeySafe, tc.safe, b)
		}
	}
	if n := runs.Load(); n != 3 {
		t.Errorf("upstream ran %d times, want 3 (one first attempt per key)", n)
	}
}
