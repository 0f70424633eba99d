package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/idemcoord/idemcoord/client"
)

// TestCancelRetriesAnUndeterminedCancelAndStopsAtARefusal: a 502 (the
// upstream gave no verdict) is asked again after its Retry-After, with no
// key, until the 200; a 409 refusal (the operation passed its
// irreversible stage) is final at once.
func TestCancelRetriesAnUndeterminedCancelAndStopsAtARefusal(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Method != http.MethodDelete || r.Header.Get("Idempotency-Key") != "" || r.Header.Get("Authorization") != "Bearer t" {
			t.Errorf("%s %s key %q auth %q, want an unkeyed DELETE with the token", r.Method, r.URL.Path,
				r.Header.Get("Idempotency-Key"), r.Header.Get("Authorization"))
		}
		w.Header().Set("Content-Type", "application/problem+json")
		switch {
		case r.URL.Path == "/v1/operations/op-late":
			w.WriteHeader(http.StatusConflict)
			io.WriteString(w, `{"type":"https://idemcoord.dev/problems/not-cancellable","title":"captured","status":409}`)
		case calls.Load() < 3:
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, `{"type":"https://idemcoord.dev/problems/cancel-undetermined","title":"no verdict","status":502}`)
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"operation_id":"op-1","state":"CANCELLED","result":"cancelled"}`)
		}
	}))
	defer srv.Close()
	rec := newSleepRecorder()
	c, err := client.New(client.Config{BaseURL: srv.URL, Token: "t", Clock: rec, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Cancel(context.Background(), "op-1")
	if err != nil || resp.Status != http.StatusOK || calls.Load() != 3 {
		t.Fatalf("Cancel = %v, %v after %d calls, want 200 on the third", resp, err, calls.Load())
	}
	for _, w := range rec.waits() {
		if w < 2e9 {
			t.Errorf("waited %v, want at least the Retry-After of 2s", w)
		}
	}
	calls.Store(10)
	resp, err = c.Cancel(context.Background(), "op-late")
	var p *client.ProblemError
	if !errors.As(err, &p) || resp == nil || resp.Status != http.StatusConflict || calls.Load() != 11 {
		t.Fatalf("Cancel(op-late) = %v, %v after %d more calls, want the 409 at once", resp, err, calls.Load()-10)
	}
	if _, err := c.Cancel(context.Background(), ""); !errors.Is(err, client.ErrInvalidIntent) {
		t.Errorf("Cancel(\"\") = %v, want ErrInvalidIntent", err)
	}
}

// TestCancelTakesOnlyNotCancellableAsAFinalRefusal: the gateway's 409
// cancel-undetermined ("the record is being updated; retry the DELETE")
// is asked again until the answer settles (200 here), and when it never
// settles within MaxAttempts Cancel gives up with a *GaveUpError, which
// says the cancel may be asked again (it wraps the last answer), not the
// 409 as a final refusal. Only
// 409 not-cancellable is final at once.
func TestCancelTakesOnlyNotCancellableAsAFinalRefusal(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		w.Header().Set("Content-Type", "application/problem+json")
		if r.URL.Path == "/v1/operations/op-settles" && n >= 3 {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"operation_id":"op-settles","state":"CANCELLED","result":"cancelled"}`)
			return
		}
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusConflict)
		io.WriteString(w, `{"type":"https://idemcoord.dev/problems/cancel-undetermined","title":"operation is changing state","status":409}`)
	}))
	defer srv.Close()
	c, err := client.New(client.Config{BaseURL: srv.URL, Token: "t", Clock: newSleepRecorder(), Seed: 1, MaxAttempts: 4})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Cancel(context.Background(), "op-settles")
	if err != nil || resp.Status != http.StatusOK || calls.Load() != 3 {
		t.Fatalf("Cancel(op-settles) = %v, %v after %d calls, want 200 on the third", resp, err, calls.Load())
	}
	calls.Store(0)
	_, err = c.Cancel(context.Background(), "op-busy")
	var gaveUp *client.GaveUpError
	if !errors.As(err, &gaveUp) || !errors.Is(err, client.ErrGaveUp) || calls.Load() != 4 {
		t.Errorf("Cancel(op-busy) = %v (%T) after %d calls, want a *GaveUpError after MaxAttempts (4)", err, err, calls.Load())
	}
}
