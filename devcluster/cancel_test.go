package devcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"
)

// TestHeldPaymentIsCancellableThroughTheGateway: the dev cluster's held
// payments are cancellable: POST answers 202, the owner's DELETE while
// the payment is held answers cancelled and GET shows CANCELLED; the
// upstream's cancel URL is not reachable through a gateway.
func TestHeldPaymentIsCancellableThroughTheGateway(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// A hold far longer than this test takes: the DELETE always finds the
	// payment reserved.
	c, err := Start(ctx, Options{Logger: slog.New(slog.DiscardHandler), Hold: 20 * time.Second, UpstreamTimeout: 25 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer ccancel()
		c.Close(cctx)
	}()
	tok, err := c.Token("alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var sendTo func(base, method, path, key string, body []byte, auth bool) (int, http.Header, map[string]any)
	send := func(method, path, key string, body []byte, auth bool) (int, http.Header, map[string]any) {
		return sendTo(c.Regions[0].URL, method, path, key, body, auth)
	}
	sendTo = func(base, method, path, key string, body []byte, auth bool) (int, http.Header, map[string]any) {
		req, _ := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(body))
		if auth {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var m map[string]any
		json.Unmarshal(b, &m)
		return res.StatusCode, res.Header, m
	}
	code, h, _ := send("POST", "/v1/held-payments", "held-1", []byte(`{"amount":"12.50","currency":"EUR","reference":"held"}`), true)
	op := h.Get("X-Idempotency-Operation-Id")
	if code != http.StatusAccepted || op == "" {
		t.Fatalf("POST = %d, op %q", code, op)
	}
	if code, _, _ := send("POST", "/internal/operations/"+op+"/cancel", "", nil, false); code != http.StatusNotFound {
		t.Fatalf("the upstream's cancel URL through the gateway = %d, want 404", code)
	}
	if code, _, body := send("DELETE", "/v1/operations/"+op, "", nil, true); code != http.StatusOK || body["result"] != "cancelled" {
		t.Fatalf("DELETE = %d %v, want cancelled", code, body)
	}
	if code, _, body := send("GET", "/v1/operations/"+op, "", nil, true); code != http.StatusOK || body["state"] != "CANCELLED" {
		t.Fatalf("GET = %d %v, want CANCELLED", code, body)
	}
	// Every region answers a retried DELETE the same (the non-owners
	// forward it to the owner): cancelled, replayed.
	for _, r := range c.Regions {
		code, h, body := sendTo(r.URL, "DELETE", "/v1/operations/"+op, "", nil, true)
		if code != http.StatusOK || body["result"] != "cancelled" || h.Get("Idempotent-Replayed") != "true" {
			t.Errorf("DELETE in %s = %d %v, want cancelled, replayed", r.Name, code, body)
		}
	}
}
