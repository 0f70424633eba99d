package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/demo/bank"
	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/gateway"
)

// post sends a payment to a gateway as actor under key.
func post(t *testing.T, c *devcluster.Cluster, base, actor, key string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	tok, err := c.Token(actor, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/payments", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set(gateway.HeaderKey, key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header, b
}

// TestReconciledAnswerIsReplayedLikeARealOne: an operation of a real dev
// cluster left OUTCOME_UNKNOWN (the bank answered past the gateway's
// timeout) is reconciled with `idemctl op reconcile --ran`: a body that
// is not JSON on the JSON endpoint and a header outside its
// response_headers are refused naming the flag, changing nothing; the
// accepted answer is then replayed to the client's retry with
// Content-Type application/json, the Location given with --header, and
// the body as given.
func TestReconciledAnswerIsReplayedLikeARealOne(t *testing.T) {
	c := devClusterWith(t, devcluster.Options{UpstreamTimeout: 500 * time.Millisecond, BankTimeout: 5 * time.Second})
	us := c.Region("us-east")
	conn := []string{"--config", us.ConfigPath, "--operator", "oncall", "--reason", "INC-3: charge found at the bank"}
	if err := c.Bank.SetFaults(bank.Faults{DelayAfter: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	actor := c.ActorHomedIn("us-east", "reconcile")
	body := []byte(`{"amount":"12.00","currency":"EUR","reference":"r-1"}`)
	status, h, _ := post(t, c, us.URL, actor, "k-1", body)
	if err := c.Bank.SetFaults(bank.Faults{}); err != nil {
		t.Fatal(err)
	}
	opID := h.Get(gateway.HeaderOperationID)
	if status != http.StatusGatewayTimeout || opID == "" {
		t.Fatalf("first answer %d (operation %q); want 504 OUTCOME_UNKNOWN", status, opID)
	}
	reconcile := func(args ...string) result {
		return runCtl(t, nil, append(append([]string{"op", "reconcile", opID, "--ran", "--status", "201"}, args...), conn...)...)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--body", "payment p-9 created"}, "--body: not valid JSON"},
		{[]string{"--body", `{"payment_id":"p-9"}`, "--header", "X-Internal: 1"}, "--header X-Internal: endpoint create-payment replays only Content-Type, Location"},
		{[]string{"--body", `{"payment_id":"p-9"}`, "--header", "Content-Type: text/plain"}, "JSON endpoint"},
	} {
		if r := reconcile(tc.args...); r.code != 1 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("reconcile %q: exit %d, stderr %q; want exit 1 naming %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	answer := `{"payment_id":"p-9","amount":"12.00"}`
	if r := reconcile("--body", answer, "--header", "Location: /v1/payments/p-9"); r.code != 0 {
		t.Fatalf("reconcile: exit %d: %s", r.code, r.stderr)
	}
	status, h, got := post(t, c, c.Region("eu-west").URL, actor, "k-1", body)
	if status != http.StatusCreated || h.Get(gateway.HeaderReplayed) != "true" {
		t.Fatalf("retry after the reconcile: %d replayed=%q %s; want a replayed 201", status, h.Get(gateway.HeaderReplayed), got)
	}
	if ct := h.Get("Content-Type"); ct != "application/json" {
		t.Errorf("replayed Content-Type %q; want application/json", ct)
	}
	if loc := h.Get("Location"); loc != "/v1/payments/p-9" {
		t.Errorf("replayed Location %q; want /v1/payments/p-9", loc)
	}
	var v map[string]string
	if err := json.Unmarshal(got, &v); err != nil || v["payment_id"] != "p-9" {
		t.Errorf("replayed body %s (%v); want the reconciled one", got, err)
	}
}
