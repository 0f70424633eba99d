package devcluster

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestTheDevControlKillsARegionWithWorkInFlight: the dev control answers
// GET / with its endpoints, names the regions when given a wrong one, and
// with the demo bank hanging, killing the region that owns the actor
// leaves the payment it was running IN_PROGRESS in the store: what
// `idemctl op list --region` then shows and a failover's reconciliation
// is about.
func TestTheDevControlKillsARegionWithWorkInFlight(t *testing.T) {
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
	control := func(method, path string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, method, c.ControlURL+path, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	code, body := control("GET", "/")
	for _, want := range []string{"/regions/NAME/stop", "/regions/NAME/kill", "/regions/NAME/start", "/bank/hang", "/bank/heal", "us-east, eu-west, ap-south"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("GET /: %d, lacks %q:\n%s", code, want, body)
		}
	}
	if code, body := control("POST", "/regions/us-est/stop"); code != http.StatusNotFound || !strings.Contains(body, "us-east, eu-west, ap-south") {
		t.Errorf("stop of a misspelt region: %d %q; want 404 naming the regions", code, body)
	}

	owner := c.Owner("alice")
	region := c.Region(owner.Owner)
	if region == nil {
		t.Fatalf("alice's owner %q is not a region", owner.Owner)
	}
	if code, body := control("POST", "/bank/hang"); code != 200 {
		t.Fatalf("POST /bank/hang: %d %s", code, body)
	}
	tok, err := c.Token("alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	sent := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", region.URL+"/v1/payments",
			bytes.NewReader([]byte(`{"amount":"1.00","currency":"EUR","reference":"in-flight"}`)))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Idempotency-Key", "in-flight-1")
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		sent <- err
	}()
	inProgress := func() int {
		var n int
		if err := c.Pool.QueryRow(ctx, `SELECT count(*) FROM idempotency_records WHERE actor_scope = 'demo/alice' AND state = 'IN_PROGRESS'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for inProgress() == 0 {
		select {
		case err := <-sent:
			t.Fatalf("the payment ended before the kill (%v): the bank did not hang", err)
		case <-ctx.Done():
			t.Fatal("the payment never reached the store")
		case <-time.After(20 * time.Millisecond): // polling the store, no lease waited for
		}
	}
	if code, body := control("POST", "/regions/"+owner.Owner+"/kill"); code != 200 || !strings.Contains(body, "killed") {
		t.Fatalf("kill %s: %d %s", owner.Owner, code, body)
	}
	<-sent // its connection was cut
	if n := inProgress(); n != 1 {
		t.Errorf("after the kill %d IN_PROGRESS operations of alice; want the one left in flight", n)
	}
	if code, _ := control("POST", "/bank/heal"); code != 200 {
		t.Errorf("POST /bank/heal: %d", code)
	}
}
