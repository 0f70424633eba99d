package gateway_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/idemcoord/idemcoord/gateway"
)

// twoStageUpstream charges, then ships; its first shipment of each
// operation fails with 503 after the charge, reporting the stage it
// reached. It counts charges by operation id, and resumes from
// X-Idempotency-Resume-From when it is sent.
type twoStageUpstream struct {
	mu       sync.Mutex
	charges  map[string]int
	shipped  map[string]bool
	attempts map[string]int
	resumes  []string
	terminal bool // answer 409 (a terminal failure) instead of the 503
	// lose drops the first answer on the wire (the connection is closed
	// after the charge, before the 503 is written); the resolve path then
	// reports that 503 and its stage.
	lose bool
	lost map[string]bool
}

func (u *twoStageUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := r.Header.Get(gateway.HeaderOperationID)
	u.mu.Lock()
	defer u.mu.Unlock()
	if r.Method == http.MethodGet { // the resolve path: only a lost answer is reported
		if !u.lost[op] {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		fmt.Fprintf(w, `{"status":503,"headers":{%q:["charged"]},"body":null}`, gateway.HeaderStage)
		return
	}
	u.attempts[op]++
	resume := r.Header.Get(gateway.HeaderResumeFrom)
	u.resumes = append(u.resumes, resume)
	if resume != "charged" {
		u.charges[op]++ // the effect
	}
	if u.attempts[op] == 1 && u.lose {
		u.lost[op] = true
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	if u.attempts[op] == 1 {
		w.Header().Set(gateway.HeaderStage, "charged")
		if u.terminal {
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"error":"card declined"}`)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	u.shipped[op] = true
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"order":%q,"charges":%d}`, op, u.charges[op])
}

func newTwoStage() *twoStageUpstream {
	return &twoStageUpstream{charges: map[string]int{}, shipped: map[string]bool{}, attempts: map[string]int{},
		lost: map[string]bool{}}
}

// TestAResolvedUnknownOutcomeKeepsTheStageItsAnswerReported: on an
// endpoint with on_retry: complete, the first attempt charges and its
// answer (503, X-Idempotency-Stage: charged) is lost on the wire, so the
// gateway records OUTCOME_UNKNOWN. The retry asks the resolve path, which
// reports that answer: the stage it carries becomes the recovery point,
// the next attempt is sent with X-Idempotency-Resume-From: charged, and
// the upstream ships without charging again.
func TestAResolvedUnknownOutcomeKeepsTheStageItsAnswerReported(t *testing.T) {
	up := newTwoStage()
	up.lose = true
	upstream := httptest.NewServer(up)
	t.Cleanup(upstream.Close)
	u, _ := url.Parse(upstream.URL)
	s, fake := clockedStore(t, 8)
	_, gw := serveGateway(t, "w", s, fake, u, resolveLine+"    on_retry: complete\n")
	alice := token(t, "alice")

	st, hd, b := do(t, post(t, gw.URL+"/v1/things", alice, "order-lost", `{"sku":"a"}`))
	if st != http.StatusGatewayTimeout || problemType(t, b) != "outcome-unknown" {
		t.Fatalf("first attempt: %s, want 504 outcome-unknown (its answer was lost)", describe(st, hd, b))
	}
	st, hd, b = do(t, post(t, gw.URL+"/v1/things", alice, "order-lost", `{"sku":"a"}`))
	up.mu.Lock()
	defer up.mu.Unlock()
	var op string
	for id := range up.attempts {
		op = id
	}
	want := fmt.Sprintf(`{"order":%q,"charges":1}`, op)
	if st != http.StatusCreated || b != want {
		t.Errorf("retry: %s, want 201 %s", describe(st, hd, b), want)
	}
	if len(up.attempts) != 1 || up.charges[op] != 1 || !up.shipped[op] {
		t.Errorf("upstream: %d operations, %d charges, shipped %v; want one operation charged once and shipped",
			len(up.attempts), up.charges[op], up.shipped[op])
	}
	if len(up.resumes) != 2 || up.resumes[0] != "" || up.resumes[1] != "charged" {
		t.Errorf("Resume-From sent %q, want none then \"charged\" (the stage the resolved answer reported)", up.resumes)
	}
}

const resolveLine = "    resolve_path: /internal/operations/{operation_id}\n"

// TestACompleteEndpointsRetryAfterA503RunsTheRestOnce: on an endpoint with
// on_retry: complete, the retry of an attempt that charged and then
// answered 503 (reporting the stage "charged") resumes from that stage:
// the upstream gets X-Idempotency-Resume-From: charged, ships without
// charging again, and the client gets 201 once; later retries replay it.
// With the default (replay) the retry starts over: no recovery point is
// sent. A terminal failure is replayed under complete as before.
func TestACompleteEndpointsRetryAfterA503RunsTheRestOnce(t *testing.T) {
	alice := token(t, "alice")
	t.Run("complete", func(t *testing.T) {
		up := newTwoStage()
		srv := serveWrapped(t, openStore(t, 8), resolveLine+"    on_retry: complete\n", up)
		st, hd, b := do(t, post(t, srv.URL+"/v1/things", alice, "order-1", `{"sku":"a"}`))
		if st != http.StatusServiceUnavailable || hd.Get(gateway.HeaderReplayed) != "" {
			t.Fatalf("first attempt: %s, want the upstream's 503", describe(st, hd, b))
		}
		op := hd.Get(gateway.HeaderOperationID)
		st, hd, b = do(t, post(t, srv.URL+"/v1/things", alice, "order-1", `{"sku":"a"}`))
		want := fmt.Sprintf(`{"order":%q,"charges":1}`, op)
		if st != http.StatusCreated || b != want || hd.Get(gateway.HeaderReplayed) != "" ||
			hd.Get(gateway.HeaderKeyStatus) != gateway.KeyStatusCreated {
			t.Fatalf("retry: %s, want 201 %s, run now (not replayed)", describe(st, hd, b), want)
		}
		st, hd, b = do(t, post(t, srv.URL+"/v1/things", alice, "order-1", `{"sku":"a"}`))
		if st != http.StatusCreated || b != want || hd.Get(gateway.HeaderReplayed) != "true" {
			t.Errorf("second retry: %s, want the 201 replayed", describe(st, hd, b))
		}
		up.mu.Lock()
		defer up.mu.Unlock()
		if up.charges[op] != 1 || !up.shipped[op] || up.attempts[op] != 2 {
			t.Errorf("upstream: %d charges, shipped %v, %d attempts; want one charge, shipped, two attempts",
				up.charges[op], up.shipped[op], up.attempts[op])
		}
		if len(up.resumes) != 2 || up.resumes[0] != "" || up.resumes[1] != "charged" {
			t.Errorf("Resume-From sent %q, want none then \"charged\"", up.resumes)
		}
	})
	t.Run("replay (default) starts over", func(t *testing.T) {
		up := newTwoStage()
		srv := serveWrapped(t, openStore(t, 8), resolveLine, up)
		do(t, post(t, srv.URL+"/v1/things", alice, "order-2", `{"sku":"a"}`))
		if st, hd, b := do(t, post(t, srv.URL+"/v1/things", alice, "order-2", `{"sku":"a"}`)); st != http.StatusCreated {
			t.Fatalf("retry: %s", describe(st, hd, b))
		}
		up.mu.Lock()
		defer up.mu.Unlock()
		if len(up.resumes) != 2 || up.resumes[1] != "" {
			t.Errorf("Resume-From sent %q, want none on either attempt", up.resumes)
		}
	})
	t.Run("terminal failure replayed", func(t *testing.T) {
		up := newTwoStage()
		up.terminal = true
		srv := serveWrapped(t, openStore(t, 8), resolveLine+"    on_retry: complete\n", up)
		do(t, post(t, srv.URL+"/v1/things", alice, "order-3", `{"sku":"a"}`))
		st, hd, b := do(t, post(t, srv.URL+"/v1/things", alice, "order-3", `{"sku":"a"}`))
		if st != http.StatusConflict || hd.Get(gateway.HeaderReplayed) != "true" {
			t.Errorf("retry of a terminal failure: %s, want its 409 replayed", describe(st, hd, b))
		}
		up.mu.Lock()
		defer up.mu.Unlock()
		if len(up.resumes) != 1 {
			t.Errorf("upstream attempts %d, want 1", len(up.resumes))
		}
	})
}
