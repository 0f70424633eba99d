package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/demo/bank"
	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/gateway"
)

// opList runs `idemctl op list ... -o json` and returns the operation ids
// and the next cursor.
func opList(t *testing.T, conn []string, args ...string) ([]string, string) {
	t.Helper()
	r := runCtl(t, nil, append(append([]string{"op", "list", "-o", "json"}, args...), conn...)...)
	if r.code != 0 {
		t.Fatalf("op list %v: exit %d: %s", args, r.code, r.stderr)
	}
	var out struct {
		Operations []struct {
			OperationID string `json:"operation_id"`
			State       string `json:"state"`
		} `json:"operations"`
		Next string `json:"next"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("op list -o json: %v\n%s", err, r.stdout)
	}
	var ids []string
	for _, o := range out.Operations {
		ids = append(ids, o.OperationID)
	}
	slices.Sort(ids)
	return ids, out.Next
}

// TestOpListShowsWhatALostRegionLeftInFlight: two payments of us-east
// actors and one of an eu-west actor are left OUTCOME_UNKNOWN in a real dev
// cluster, beside a completed one; us-east is stopped and failed over.
// `idemctl op list --region us-east` lists exactly the two us-east
// operations in flight (not the completed one, not eu-west's), page by
// page with --limit and --after, and filters by --state, --endpoint and
// --older-than; the table ends with the count.
func TestOpListShowsWhatALostRegionLeftInFlight(t *testing.T) {
	c := devClusterWith(t, devcluster.Options{UpstreamTimeout: 500 * time.Millisecond, BankTimeout: 5 * time.Second})
	eu := c.Region("eu-west")
	conn := []string{"--config", eu.ConfigPath}
	body := []byte(`{"amount":"3.00","currency":"EUR","reference":"r"}`)
	status, h, _ := post(t, c, eu.URL, c.ActorHomedIn("us-east", "done"), "k-done", body)
	if status != http.StatusCreated {
		t.Fatalf("completed payment: %d", status)
	}
	completed := h.Get(gateway.HeaderOperationID)
	if err := c.Bank.SetFaults(bank.Faults{DelayAfter: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	var usUnknown []string
	for i := range 2 {
		status, h, _ := post(t, c, eu.URL, c.ActorHomedIn("us-east", fmt.Sprintf("lost%d", i)), "k", body)
		if status != http.StatusGatewayTimeout {
			t.Fatalf("payment %d: %d, want 504", i, status)
		}
		usUnknown = append(usUnknown, h.Get(gateway.HeaderOperationID))
	}
	status, _, _ = post(t, c, eu.URL, c.ActorHomedIn("eu-west", "other"), "k", body)
	if status != http.StatusGatewayTimeout {
		t.Fatalf("eu-west payment: %d, want 504", status)
	}
	if err := c.Bank.SetFaults(bank.Faults{}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(usUnknown)
	if err := c.StopRegion(t.Context(), "us-east"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, func() string {
		if st, _, owned, _ := regionState(t, conn, "us-east"); st != "failed" || owned != 0 {
			return fmt.Sprintf("us-east is %s owning %d shards; want failed over", st, owned)
		}
		return ""
	})

	if got, next := opList(t, conn, "--region", "us-east"); !slices.Equal(got, usUnknown) || next != "" {
		t.Errorf("op list --region us-east = %v (next %q); want %v, one page", got, next, usUnknown)
	}
	first, next := opList(t, conn, "--region", "us-east", "--limit", "1")
	second, last := opList(t, conn, "--region", "us-east", "--limit", "1", "--after", next)
	if got := append(first, second...); len(first) != 1 || next == "" || last != "" || !slices.Equal(sortedCopy(got), usUnknown) {
		t.Errorf("pages of 1: %v (next %q) then %v (next %q); want %v", first, next, second, last, usUnknown)
	}
	if got, _ := opList(t, conn, "--region", "us-east", "--state", "COMPLETED"); !slices.Equal(got, []string{completed}) {
		t.Errorf("--state COMPLETED = %v; want [%s]", got, completed)
	}
	for _, args := range [][]string{{"--endpoint", "create-held-payment"}, {"--older-than", "1h"}} {
		if got, _ := opList(t, conn, append([]string{"--region", "us-east"}, args...)...); len(got) != 0 {
			t.Errorf("op list --region us-east %v = %v; want none", args, got)
		}
	}
	r := runCtl(t, nil, append([]string{"op", "list", "--region", "us-east"}, conn...)...)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "OPERATION") || !regexp.MustCompile(`(?m)^2 operations$`).MatchString(r.stdout) {
		t.Errorf("op list table: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runCtl(t, nil, append([]string{"op", "list", "--region", "narnia"}, conn...)...); r.code != 1 || !strings.Contains(r.stderr, `--region: "narnia"`) {
		t.Errorf("op list --region narnia: exit %d %q", r.code, r.stderr)
	}
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
