package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"
)

// windowLines configure the two-stage endpoint to complete partly done
// intents, with a provider that forgets its keys after a day; the key is
// kept three days, so retries after the window still find the record.
const windowLines = resolveLine + "    on_retry: complete\n    ttl: 72h\n    downstream_window: 24h\n"

// windowProblem is the 409 downstream-window-passed as a client reads it.
type windowProblem struct {
	Type           string `json:"type"`
	Status         int    `json:"status"`
	OperationID    string `json:"operation_id"`
	OperationState string `json:"operation_state"`
	NewKeySafe     *bool  `json:"new_key_safe"`
}

// checkWindowRefusal fails t unless the answer is 409
// downstream-window-passed for operation op in state, with
// new_key_safe false.
func checkWindowRefusal(t *testing.T, st int, hd http.Header, b, op, state string) {
	t.Helper()
	var p windowProblem
	if err := json.Unmarshal([]byte(b), &p); err != nil || st != http.StatusConflict ||
		p.Type != "https://idemcoord.dev/problems/downstream-window-passed" || p.OperationID != op ||
		p.OperationState != state || p.NewKeySafe == nil || *p.NewKeySafe || hd.Get("Retry-After") != "" {
		t.Errorf("retry past the window: %s, want 409 downstream-window-passed for %s in %s, new_key_safe false, "+
			"no Retry-After", describe(st, hd, b), op, state)
	}
}

// TestPastTheDownstreamWindowACompleteResumeIsNotSentButFinishedAnswersReplay:
// on an on_retry: complete endpoint with downstream_window: 24h, an
// attempt that charged and answered 503 is resumed by a retry within the
// window, and that finished answer is still replayed after it; but the
// retry of another such attempt 25 hours later (the store's clock moved,
// no sleep) is refused with 409 downstream-window-passed, and the
// upstream gets nothing: the provider may have forgotten the charge's key.
func TestPastTheDownstreamWindowACompleteResumeIsNotSentButFinishedAnswersReplay(t *testing.T) {
	up := newTwoStage()
	upstream := httptest.NewServer(up)
	t.Cleanup(upstream.Close)
	u, _ := url.Parse(upstream.URL)
	s, fake := clockedStore(t, 8)
	_, gw := serveGateway(t, "w", s, fake, u, windowLines)
	alice := token(t, "alice")

	do(t, post(t, gw.URL+"/v1/things", alice, "order-done", `{"sku":"a"}`))
	st, hd, done := do(t, post(t, gw.URL+"/v1/things", alice, "order-done", `{"sku":"a"}`))
	if st != http.StatusCreated {
		t.Fatalf("resume within the window: %s, want 201", describe(st, hd, done))
	}
	st, hd, b := do(t, post(t, gw.URL+"/v1/things", alice, "order-late", `{"sku":"b"}`))
	if st != http.StatusServiceUnavailable {
		t.Fatalf("first attempt: %s, want the upstream's 503 after the charge", describe(st, hd, b))
	}
	late := hd.Get("X-Idempotency-Operation-Id")

	fake.Advance(25 * time.Hour)
	st, hd, b = do(t, post(t, gw.URL+"/v1/things", alice, "order-late", `{"sku":"b"}`))
	checkWindowRefusal(t, st, hd, b, late, "RETRYABLE_FAILURE")
	st, hd, b = do(t, post(t, gw.URL+"/v1/things", alice, "order-done", `{"sku":"a"}`))
	if st != http.StatusCreated || b != done || hd.Get("Idempotent-Replayed") != "true" {
		t.Errorf("finished answer after the window: %s, want its 201 replayed", describe(st, hd, b))
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if up.attempts[late] != 1 || up.charges[late] != 1 || up.shipped[late] {
		t.Errorf("upstream for the late operation: %d attempts, %d charges, shipped %v; want the first attempt only",
			up.attempts[late], up.charges[late], up.shipped[late])
	}
}

// TestPastTheDownstreamWindowAnUnknownOutcomeIsNotReDriven: an attempt
// whose answer was lost on the wire is OUTCOME_UNKNOWN. Within the window
// a retry would ask the resolve path and resume it (see
// TestAResolvedUnknownOutcomeKeepsTheStageItsAnswerReported); 25 hours
// later (the store's clock) the retry gets 409 downstream-window-passed
// naming the operation and OUTCOME_UNKNOWN, the record stays
// OUTCOME_UNKNOWN for idemctl op reconcile, and nothing more reaches the
// upstream.
func TestPastTheDownstreamWindowAnUnknownOutcomeIsNotReDriven(t *testing.T) {
	up := newTwoStage()
	up.lose = true
	upstream := httptest.NewServer(up)
	t.Cleanup(upstream.Close)
	u, _ := url.Parse(upstream.URL)
	s, fake := clockedStore(t, 8)
	_, gw := serveGateway(t, "w", s, fake, u, windowLines)
	alice := token(t, "alice")

	st, hd, b := do(t, post(t, gw.URL+"/v1/things", alice, "order-lost", `{"sku":"a"}`))
	if st != http.StatusGatewayTimeout {
		t.Fatalf("first attempt: %s, want 504 outcome-unknown", describe(st, hd, b))
	}
	op := hd.Get("X-Idempotency-Operation-Id")
	fake.Advance(25 * time.Hour)
	for i := range 2 { // the second retry finds the record as the first left it
		st, hd, b = do(t, post(t, gw.URL+"/v1/things", alice, "order-lost", `{"sku":"a"}`))
		t.Run(fmt.Sprint("retry ", i+1), func(t *testing.T) { checkWindowRefusal(t, st, hd, b, op, "OUTCOME_UNKNOWN") })
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if up.attempts[op] != 1 || up.shipped[op] {
		t.Errorf("upstream: %d attempts, shipped %v; want the lost first attempt only", up.attempts[op], up.shipped[op])
	}
}
