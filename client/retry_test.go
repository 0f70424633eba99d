package client_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/client"
)

type payment struct {
	Order  string `json:"order"`
	Amount int    `json:"amount"`
}

func TestDoRetriesUntilOneEffect(t *testing.T) {
	tests := []struct {
		name         string
		key          string
		failFirst    int
		failStatus   int
		loseFirst    bool
		wantAttempts int
		wantReplayed bool
	}{
		{name: "first attempt succeeds", wantAttempts: 1},
		{name: "409 in progress three times", failFirst: 3, failStatus: 409, wantAttempts: 4},
		{name: "503 store unavailable twice", failFirst: 2, failStatus: 503, wantAttempts: 3},
		{name: "429 four times", failFirst: 4, failStatus: 429, wantAttempts: 5},
		{name: "answer lost after the effect", loseFirst: true, wantAttempts: 2, wantReplayed: true},
		{name: "409 then answer lost", failFirst: 1, failStatus: 409, loseFirst: true, wantAttempts: 3, wantReplayed: true},
		{name: "key needing escapes", key: `pay "17" \ A`, failFirst: 2, failStatus: 409, wantAttempts: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGateway()
			g.failFirst, g.failStatus, g.retryAfter, g.loseFirst = tt.failFirst, tt.failStatus, "0", tt.loseFirst
			c, rec := startGateway(t, g, nil)
			key := tt.key
			if key == "" {
				key = client.NewKey()
			}
			p := payment{Order: "o-17", Amount: 4200}

			resp, err := c.PostJSON(t.Context(), "/v1/payments", key, p)
			if err != nil {
				t.Fatalf("PostJSON: %v", err)
			}
			type result struct {
				Status, Attempts, Executions, Sleeps int
				Replayed                             bool
			}
			got := result{resp.Status, resp.Attempts, g.executions(key), len(rec.waits()), resp.Replayed}
			want := result{201, tt.wantAttempts, 1, tt.wantAttempts - 1, tt.wantReplayed}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if resp.OperationID == "" {
				t.Error("OperationID is empty")
			}

			// Every attempt carried the same key and the same body bytes.
			body, _ := json.Marshal(p)
			wantReq := seenRequest{
				KeyHeader:   `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`,
				Body:        string(body),
				ContentType: "application/json",
			}
			var wantReqs []seenRequest
			for range tt.wantAttempts {
				wantReqs = append(wantReqs, wantReq)
			}
			if diff := cmp.Diff(wantReqs, g.requests(key)); diff != "" {
				t.Errorf("requests seen by the gateway (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDoSameKeyTwiceReplays(t *testing.T) {
	g := newGateway()
	c, _ := startGateway(t, g, nil)
	key := client.NewKey()
	p := payment{Order: "o-18", Amount: 100}

	first, err := c.PostJSON(t.Context(), "/v1/payments", key, p)
	if err != nil {
		t.Fatalf("first PostJSON: %v", err)
	}
	second, err := c.PostJSON(t.Context(), "/v1/payments", key, p)
	if err != nil {
		t.Fatalf("second PostJSON: %v", err)
	}
	if first.Replayed || !second.Replayed {
		t.Errorf("Replayed = %v, %v; want false, true", first.Replayed, second.Replayed)
	}
	if first.OperationID != second.OperationID {
		t.Errorf("OperationID = %q, then %q; want the same", first.OperationID, second.OperationID)
	}
	var a, b struct {
		PaymentID string  `json:"payment_id"`
		Request   payment `json:"request"`
	}
	if err := first.DecodeJSON(&a); err != nil {
		t.Fatal(err)
	}
	if err := second.DecodeJSON(&b); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("replayed body differs (-first +second):\n%s", diff)
	}
	if a.PaymentID == "" || a.Request != p {
		t.Errorf("decoded %+v; want a payment id and the request echoed", a)
	}
	if n := g.executions(key); n != 1 {
		t.Errorf("upstream ran %d times; want 1", n)
	}
}

func TestDoNeverRetriesFinalStatuses(t *testing.T) {
	tests := []struct {
		name         string
		path         string
		token        string // gateway wants "right"
		mismatch     bool   // send a first request, then another body under the same key
		wantStatus   int
		wantRequests int
		wantMismatch bool
		wantNewKey   bool
		wantReplayed bool
	}{
		{name: "400 from upstream", path: "/v1/status/400", wantStatus: 400, wantRequests: 1},
		{name: "401 from gateway", path: "/v1/payments", token: "wrong", wantStatus: 401, wantRequests: 1, wantNewKey: true},
		{name: "404 from upstream", path: "/v1/status/404", wantStatus: 404, wantRequests: 1},
		{name: "413 from upstream", path: "/v1/status/413", wantStatus: 413, wantRequests: 1},
		{name: "422 from upstream is not a mismatch", path: "/v1/status/422", wantStatus: 422, wantRequests: 1},
		{name: "422 fingerprint mismatch", path: "/v1/payments", mismatch: true, wantStatus: 422, wantRequests: 2, wantMismatch: true, wantNewKey: true},
		{name: "501 from upstream", path: "/v1/status/501", wantStatus: 501, wantRequests: 1},
		// A first-run 409 from the upstream is retried once; the retry
		// gets the stored 409 as a replay, which is final.
		{name: "409 from upstream ends at its replay", path: "/v1/status/409", wantStatus: 409, wantRequests: 2, wantReplayed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGateway()
			g.token = "right"
			token := tt.token
			if token == "" {
				token = "right"
			}
			c, rec := startGateway(t, g, func(cfg *client.Config) { cfg.Token = token })
			key := client.NewKey()
			if tt.mismatch {
				if _, err := c.PostJSON(t.Context(), tt.path, key, payment{Order: "a"}); err != nil {
					t.Fatalf("first PostJSON: %v", err)
				}
			}

			resp, err := c.PostJSON(t.Context(), tt.path, key, payment{Order: "b"})

			var pe *client.ProblemError
			if !errors.As(err, &pe) {
				t.Fatalf("error = %v; want a *ProblemError", err)
			}
			if errors.Is(err, client.ErrGaveUp) {
				t.Errorf("error %v matches ErrGaveUp; want a final answer", err)
			}
			if resp == nil {
				t.Fatal("Response is nil; want the final answer next to the error")
			}
			type result struct {
				Status, ProblemStatus, Requests, Executions, Sleeps int
				Mismatch, NewKeySafe, Replayed                      bool
			}
			got := result{resp.Status, pe.Status, len(g.requests(key)), g.executions(key), len(rec.waits()),
				errors.Is(err, client.ErrFingerprintMismatch), pe.NewKeySafe, resp.Replayed}
			want := result{tt.wantStatus, tt.wantStatus, tt.wantRequests, 1, tt.wantRequests - 1,
				tt.wantMismatch, tt.wantNewKey, tt.wantReplayed}
			switch {
			case tt.mismatch:
				want.Sleeps = 0 // the first request succeeded at once
			case tt.wantStatus == 401:
				want.Executions = 0 // refused before the upstream
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}

func TestDoHonoursRetryAfter(t *testing.T) {
	now := testEpoch // the clients' clock: an HTTP-date is measured from it
	tests := []struct {
		name       string
		status     int
		retryAfter string
		lo, hi     time.Duration
	}{
		{"zero seconds", 409, "0", 0, time.Millisecond},
		{"three seconds", 503, "3", 3 * time.Second, 3 * time.Second},
		{"over the cap", 503, "600", client.MaxRetryWait, client.MaxRetryWait},
		{"HTTP-date ten seconds ahead", 429, now.Add(10 * time.Second).UTC().Format(http.TimeFormat), 8 * time.Second, 10 * time.Second},
		{"HTTP-date in the past", 503, now.Add(-time.Hour).UTC().Format(http.TimeFormat), 0, time.Millisecond},
		{"malformed", 503, "soon", 0, time.Millisecond},
		{"absent", 503, "", 0, time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGateway()
			g.failFirst, g.failStatus, g.retryAfter = 1, tt.status, tt.retryAfter
			c, rec := startGateway(t, g, func(cfg *client.Config) {
				cfg.BaseDelay, cfg.MaxDelay = time.Millisecond, time.Millisecond
			})
			if _, err := c.PostJSON(t.Context(), "/v1/payments", client.NewKey(), payment{}); err != nil {
				t.Fatalf("PostJSON: %v", err)
			}
			waits := rec.waits()
			if len(waits) != 1 || waits[0] < tt.lo || waits[0] > tt.hi {
				t.Errorf("waits = %v; want one in [%v, %v]", waits, tt.lo, tt.hi)
			}
		})
	}
}

func TestDoGivesUpAfterMaxAttempts(t *testing.T) {
	tests := []struct {
		name       string
		failStatus int
		path       string
		wantState  string
	}{
		{name: "409 in progress", failStatus: 409, path: "/v1/payments", wantState: "IN_PROGRESS"},
		{name: "503", failStatus: 503, path: "/v1/payments", wantState: "IN_PROGRESS"},
		{name: "429", failStatus: 429, path: "/v1/payments", wantState: "IN_PROGRESS"},
		{name: "500 from upstream each time", path: "/v1/status/500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGateway()
			if tt.failStatus != 0 {
				g.failFirst, g.failStatus, g.retryAfter = 1000, tt.failStatus, "1"
			}
			c, rec := startGateway(t, g, func(cfg *client.Config) { cfg.MaxAttempts = 4 })
			key := client.NewKey()

			resp, err := c.PostJSON(t.Context(), tt.path, key, payment{Order: "o"})

			if !errors.Is(err, client.ErrGaveUp) {
				t.Fatalf("error = %v; want ErrGaveUp", err)
			}
			var gu *client.GaveUpError
			var pe *client.ProblemError
			if !errors.As(err, &gu) || !errors.As(err, &pe) {
				t.Fatalf("error = %v; want a *GaveUpError wrapping a *ProblemError", err)
			}
			if !strings.Contains(err.Error(), "after 4 attempts") {
				t.Errorf("error %q does not say how many attempts", err)
			}
			wantStatus := tt.failStatus
			if wantStatus == 0 {
				wantStatus = 500
			}
			type result struct {
				Attempts, RespStatus, ProblemStatus, Requests, Sleeps int
				State                                                 string
			}
			got := result{gu.Attempts, resp.Status, pe.Status, len(g.requests(key)), len(rec.waits()), pe.OperationState}
			want := result{4, wantStatus, wantStatus, 4, 3, tt.wantState}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}
