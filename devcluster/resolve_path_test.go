package devcluster

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"
)

// The payments service's resolve URL is for the gateway only, but every
// region's gateway proxies unmatched routes to the upstream as they are, so
// anyone who can reach a gateway — without a token — reads another actor's
// payment (id, amount, reference) by operation id, which the contract
// refuses even to authenticated other actors (GET /v1/operations/{id}
// answers the owning actor only).
func TestResolvePathIsNotReachableThroughTheGateway(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := Start(ctx, Options{Logger: slog.New(slog.DiscardHandler)})
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
	req, _ := http.NewRequestWithContext(ctx, "POST", c.Regions[0].URL+"/v1/payments",
		bytes.NewReader([]byte(`{"amount":"12.50","currency":"EUR","reference":"alice-secret-order"}`)))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Idempotency-Key", "review2-1")
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	op := res.Header.Get("X-Idempotency-Operation-Id")
	if res.StatusCode != http.StatusCreated || op == "" {
		t.Fatalf("create = %d, op %q", res.StatusCode, op)
	}
	// No token at all, through another region's public gateway.
	req, _ = http.NewRequestWithContext(ctx, "GET", c.Regions[1].URL+"/internal/operations/"+op, nil)
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode == http.StatusOK || bytes.Contains(body, []byte("alice-secret-order")) {
		t.Fatalf("unauthenticated GET /internal/operations/%s through the gateway = %d:\n%s", op, res.StatusCode, body)
	}
}
