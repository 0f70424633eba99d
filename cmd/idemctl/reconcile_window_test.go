package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// TestReconcileSettlesWhatThePastWindowGuardLeaves: on a real PostgreSQL,
// an endpoint with downstream_window 24h holds operations first claimed
// 48 hours ago that the gateway will never send again (a retry's claim
// gets WindowPassed, the 409): a RETRYABLE_FAILURE and an IN_PROGRESS
// whose lease expired. `idemctl op reconcile` settles the first --ran
// (COMPLETED: the retry's claim now replays it) and the second --not-run
// (RETRYABLE_FAILURE), each audited as a reconcile; it refuses, changing
// nothing, a RETRYABLE_FAILURE within the window, an IN_PROGRESS whose
// lease still runs, and --not-run of a RETRYABLE_FAILURE.
func TestReconcileSettlesWhatThePastWindowGuardLeaves(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	if _, _, err := ctl(t, "migrate", "--dsn", dsn); err != nil {
		t.Fatal(err)
	}
	t.Setenv("WINDOW_TEST_SECRET", string(outageSecret))
	cfgPath := filepath.Join(t.TempDir(), "idemd.yaml")
	if err := os.WriteFile(cfgPath, []byte(`region: west
listen: 127.0.0.1:0
upstream: http://127.0.0.1:1
store: {dsn: "`+dsn+`"}
auth: {issuer: test, audience: idemcoord, hs256_secret_env: WINDOW_TEST_SECRET}
endpoints:
  - name: pay
    method: POST
    path: /v1/payments
    key: required
    upstream_timeout: 5s
    downstream_window: 24h
`), 0o600); err != nil {
		t.Fatal(err)
	}

	// Records written on a database clock 48 hours back: first claimed
	// then, their one-minute leases long over by now.
	past := clock.NewFake(time.Now().Add(-48 * time.Hour))
	old, err := sqlstore.Open(ctx, sqlstore.Config{DSN: dsn, MaxConns: 2, DBClock: past})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	now, err := sqlstore.Open(ctx, sqlstore.Config{DSN: dsn, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer now.Close()
	if err := now.BootstrapFences(ctx, shard.DefaultCount, func(int) string { return "west" }); err != nil {
		t.Fatal(err)
	}
	const actor = "t/alice"
	request := func(key string, lease time.Duration) store.ClaimRequest {
		return store.ClaimRequest{Scope: store.Scope{Actor: actor, Endpoint: "pay", Key: idempotency.Key(key)},
			Fingerprint: idempotency.Fingerprint{Version: 1, Sum: [32]byte{7}}, Worker: "west-w",
			Token: fencing.Token{Shard: shard.Of(actor, shard.DefaultCount), Epoch: 1, Region: "west"},
			Lease: lease, TTL: 30 * 24 * time.Hour, DownstreamWindow: 24 * time.Hour}
	}
	begin := func(s *sqlstore.Store, key string, lease time.Duration) store.Claim {
		c, err := s.Begin(ctx, request(key, lease))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	retryable := func(s *sqlstore.Store, key string) store.Claim {
		c := begin(s, key, time.Minute)
		if err := s.Finish(ctx, c.Lease, store.Result{State: idempotency.RetryableFailure, ErrorSummary: "503 upstream"}); err != nil {
			t.Fatal(err)
		}
		return c
	}
	failed := retryable(old, "k-retryable")           // RETRYABLE_FAILURE, past the window
	stranded := begin(old, "k-stranded", time.Minute) // IN_PROGRESS, lease expired, past the window
	leased := begin(old, "k-leased", 72*time.Hour)    // IN_PROGRESS past the window, lease still running
	recent := retryable(now, "k-recent")              // RETRYABLE_FAILURE within the window

	claimOutcome := func(key string) store.Outcome {
		c, err := now.Begin(ctx, request(key, time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		return c.Outcome
	}
	if got := claimOutcome("k-retryable"); got != store.WindowPassed {
		t.Fatalf("a retry of the old RETRYABLE_FAILURE: %v, want WindowPassed (the 409)", got)
	}

	conn := []string{"--config", cfgPath, "--operator", "oncall", "--reason", "INC-4: checked at the provider"}
	reconcile := func(id string, args ...string) (string, error) {
		_, errOut, err := ctl(t, append(append([]string{"op", "reconcile", id}, args...), conn...)...)
		return errOut, err
	}
	state := func(key string) store.Record {
		rec, err := now.Read(ctx, store.Scope{Actor: actor, Endpoint: "pay", Key: idempotency.Key(key)})
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}

	for _, tc := range []struct {
		name string
		c    store.Claim
		args []string
		want string
	}{
		{"within the window", recent, []string{"--ran", "--status", "201"}, "within its window"},
		{"lease still running", leased, []string{"--not-run"}, "lease runs until"},
		{"not-run of a retryable failure", failed, []string{"--not-run"}, "RETRYABLE_FAILURE already"},
	} {
		before := state(string(tc.c.Record.Scope.Key))
		if _, err := reconcile(tc.c.Lease.OperationID.String(), tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) ||
			!strings.Contains(err.Error(), "nothing changed") {
			t.Errorf("%s: reconcile %v: %v; want a refusal naming %q, nothing changed", tc.name, tc.args, err, tc.want)
		}
		if after := state(string(tc.c.Record.Scope.Key)); after.State != before.State || after.Version != before.Version {
			t.Errorf("%s: record %s v%d after the refusal, was %s v%d", tc.name, after.State, after.Version, before.State, before.Version)
		}
	}

	if _, err := reconcile(failed.Lease.OperationID.String(), "--ran", "--status", "201", "--body", `{"payment_id":"p-1"}`); err != nil {
		t.Fatalf("reconcile --ran of the old RETRYABLE_FAILURE: %v", err)
	}
	if rec := state("k-retryable"); rec.State != idempotency.Completed || rec.Snapshot.Status != 201 ||
		!strings.HasPrefix(rec.LeaseOwner, "reconcile/") {
		t.Errorf("after reconcile --ran: %s %d by %q; want COMPLETED 201 by reconcile/...", rec.State, rec.Snapshot.Status, rec.LeaseOwner)
	}
	if got := claimOutcome("k-retryable"); got != store.Replayed {
		t.Errorf("a retry after the reconcile: %v, want Replayed (no more 409)", got)
	}
	if _, err := reconcile(stranded.Lease.OperationID.String(), "--not-run"); err != nil {
		t.Fatalf("reconcile --not-run of the stranded IN_PROGRESS: %v", err)
	}
	if rec := state("k-stranded"); rec.State != idempotency.RetryableFailure {
		t.Errorf("after reconcile --not-run: %s; want RETRYABLE_FAILURE", rec.State)
	}

	rows, err := now.QueryAudit(ctx, store.AuditFilter{Action: "reconcile"})
	if err != nil {
		t.Fatal(err)
	}
	audited := map[string]string{}
	for _, r := range rows {
		if r.OperationID != nil {
			audited[r.OperationID.String()] = r.Operator + " " + r.Reason + " " + r.Detail
		}
	}
	for id, want := range map[string]string{
		failed.Lease.OperationID.String():   "COMPLETED past the downstream window (was RETRYABLE_FAILURE",
		stranded.Lease.OperationID.String(): "RETRYABLE_FAILURE past the downstream window (was IN_PROGRESS",
	} {
		if got := audited[id]; !strings.HasPrefix(got, "oncall INC-4: checked at the provider") || !strings.Contains(got, want) {
			t.Errorf("audit of %s: %q; want oncall, the reason and %q", id, got, want)
		}
	}
	if len(audited) != 2 {
		t.Errorf("%d operations audited as reconciled, want 2 (the refusals change and audit nothing): %v", len(audited), audited)
	}
}
