package devcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

// answer is what a test reads of one HTTP answer.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// TestDevClusterServesTransfersThroughARegionLossAndRefusesPayments: the
// dev cluster declares a transfer endpoint (POST /v1/transfers, failover:
// transfer) next to the reject one (POST /v1/payments). Both are
// coordinated (an operation id, the owner region named, a retry in
// another region replayed). Once the region owning an actor is stopped
// and its shards failed over, the actor's transfers are served by the new
// owner, charged once, while its payments are refused with 503 and
// Retry-After, executing nothing, until an operator accepts or fails back.
func TestDevClusterServesTransfersThroughARegionLossAndRefusesPayments(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
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
	actor := c.ActorHomedIn("us-east", "xfer")
	tok, err := c.Token(actor, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	send := func(region, method, path, key, reference string) answer {
		t.Helper()
		var body io.Reader
		if reference != "" {
			body = strings.NewReader(fmt.Sprintf(`{"amount":"3.00","currency":"EUR","reference":%q}`, reference))
		}
		req, _ := http.NewRequestWithContext(ctx, method, c.Region(region).URL+path, body)
		req.Header.Set("Authorization", "Bearer "+tok)
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return answer{res.StatusCode, res.Header, b}
	}

	// Before the loss: both endpoints coordinated, served by the owner.
	for _, path := range []string{"/v1/payments", "/v1/transfers"} {
		key := "before" + strings.ReplaceAll(path, "/", "-")
		a := send("eu-west", "POST", path, key, key)
		if a.status != http.StatusCreated || a.header.Get("X-Idempotency-Operation-Id") == "" ||
			a.header.Get("X-Idempotency-Region") != "us-east" {
			t.Fatalf("POST %s via eu-west: %d, operation %q, region %q: %s; want 201 from us-east, coordinated",
				path, a.status, a.header.Get("X-Idempotency-Operation-Id"), a.header.Get("X-Idempotency-Region"), a.body)
		}
	}

	if err := c.StopRegion(ctx, "us-east"); err != nil {
		t.Fatal(err)
	}
	// The transfer is retried with its key until the new owner serves it;
	// every answer before that executed nothing and says when to retry.
	var served answer
	deadline := time.Now().Add(60 * time.Second)
	for {
		served = send("eu-west", "POST", "/v1/transfers", "after-loss", "after-loss")
		if served.status == http.StatusCreated {
			break
		}
		if served.status != http.StatusServiceUnavailable || served.header.Get("Retry-After") == "" {
			t.Fatalf("transfer during the failover: %d (Retry-After %q): %s; want 503 with Retry-After",
				served.status, served.header.Get("Retry-After"), served.body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("transfer still refused 60s after us-east stopped: %s", served.body)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(200 * time.Millisecond): // the next retry, as a client's
		}
	}
	if r := served.header.Get("X-Idempotency-Region"); r == "us-east" || r == "" {
		t.Errorf("transfer after the loss served by %q; want the new owner", r)
	}
	op := served.header.Get("X-Idempotency-Operation-Id")
	if again := send("ap-south", "POST", "/v1/transfers", "after-loss", "after-loss"); again.status != http.StatusCreated ||
		again.header.Get("Idempotent-Replayed") != "true" || again.header.Get("X-Idempotency-Operation-Id") != op {
		t.Errorf("transfer retried via ap-south: %d, replayed %q, operation %q (want %q): %s",
			again.status, again.header.Get("Idempotent-Replayed"), again.header.Get("X-Idempotency-Operation-Id"), op, again.body)
	}

	// The same actor's payment: its shard is failed over, so the reject
	// endpoint refuses it and runs nothing.
	refused := send("eu-west", "POST", "/v1/payments", "payment-after-loss", "payment-after-loss")
	var p struct {
		Type string `json:"type"`
	}
	json.Unmarshal(refused.body, &p)
	if refused.status != http.StatusServiceUnavailable || refused.header.Get("Retry-After") == "" ||
		!strings.HasSuffix(p.Type, "/region-failover") {
		t.Errorf("payment after the loss: %d (Retry-After %q), type %q: %s; want 503 region-failover with Retry-After",
			refused.status, refused.header.Get("Retry-After"), p.Type, refused.body)
	}

	list := send("eu-west", "GET", "/v1/payments", "", "")
	var rows struct {
		Payments []struct {
			Reference string `json:"reference"`
		} `json:"payments"`
	}
	if err := json.Unmarshal(list.body, &rows); err != nil {
		t.Fatalf("GET /v1/payments: %d: %v: %s", list.status, err, list.body)
	}
	charged := map[string]int{}
	for _, r := range rows.Payments {
		charged[r.Reference]++
	}
	want := map[string]int{"before-v1-payments": 1, "before-v1-transfers": 1, "after-loss": 1}
	for ref, n := range want {
		if charged[ref] != n {
			t.Errorf("%s charged %d times, want %d (all: %v)", ref, charged[ref], n, charged)
		}
	}
	if charged["payment-after-loss"] != 0 {
		t.Errorf("the refused payment was charged %d times", charged["payment-after-loss"])
	}
}
