package main

import (
	"bytes"
	"context"
	"encoding/json"
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

// idemctl runs idemctl with args and returns its output and error.
func idemctl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := rootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := cmd.ExecuteContext(ctx)
	return out.String(), err
}

// storeWithRecord returns a fresh database holding one COMPLETED record
// of actor, and the record.
func storeWithRecord(t *testing.T, actor string) (string, *sqlstore.Store, store.Record) {
	t.Helper()
	return recordStore(t, actor, "order-1", nil, func(*store.ClaimRequest) {},
		store.Snapshot{Status: 201, Body: []byte(`{"id":"p1"}`)})
}

// recordStore returns a fresh database whose time is db (nil: the
// database's own) holding one record of actor under key, claimed with the
// request edit changes and finished COMPLETED with snap, and the record.
func recordStore(t *testing.T, actor, key string, db clock.Clock, edit func(*store.ClaimRequest),
	snap store.Snapshot) (string, *sqlstore.Store, store.Record) {
	t.Helper()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	s, err := sqlstore.Open(ctx, sqlstore.Config{Migrate: true, DSN: dsn, MaxConns: 4, DBClock: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.BootstrapFences(ctx, shard.DefaultCount, func(int) string { return "us-east" }); err != nil {
		t.Fatal(err)
	}
	k, err := idempotency.ParseKeyHeader(key)
	if err != nil {
		t.Fatal(err)
	}
	fp, err := idempotency.ComputeFingerprint(idempotency.Request{Method: "POST", Path: "/v1/payments",
		ContentType: "application/json", Body: []byte(`{"amount":"1"}`)}, idempotency.FingerprintOptions{})
	if err != nil {
		t.Fatal(err)
	}
	req := store.ClaimRequest{
		Scope:       store.Scope{Actor: actor, Endpoint: "create-payment", Key: k},
		Fingerprint: fp,
		Token:       fencing.Token{Shard: shard.Of(actor, shard.DefaultCount), Epoch: 1, Region: "us-east"},
		Worker:      "test", Lease: 30 * time.Second, TTL: time.Hour,
	}
	edit(&req)
	c, err := s.Begin(ctx, req)
	if err != nil || c.Lease == nil {
		t.Fatalf("begin: %v (%v)", err, c.Outcome)
	}
	if err := s.Finish(ctx, c.Lease, store.Result{State: idempotency.Completed, Snapshot: snap}); err != nil {
		t.Fatal(err)
	}
	rec, err := s.Read(ctx, c.Record.Scope)
	if err != nil {
		t.Fatal(err)
	}
	return dsn, s, rec
}

// auditRows returns the audit log as "action operator reason detail" lines.
func auditRows(t *testing.T, s *sqlstore.Store) []string {
	t.Helper()
	log, err := s.AuditLog(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, e := range log {
		rows = append(rows, strings.Join([]string{e.Action, e.Operator, e.Reason, e.Detail}, " | "))
	}
	return rows
}

// TestCleanupIsAuditedWithOperatorAndReason: op cleanup is a repair like
// the others, so it records who ran it and why.
func TestCleanupIsAuditedWithOperatorAndReason(t *testing.T) {
	dsn, s, _ := storeWithRecord(t, "demo/demo")
	out, err := idemctl(t, "op", "cleanup", "--dsn", dsn, "--operator", "oncall@example.com", "--reason", "INC-9 bloat")
	if err != nil {
		t.Fatalf("op cleanup: %v", err)
	}
	if !strings.Contains(out, "deleted 0 expired records") {
		t.Errorf("output %q", out)
	}
	rows := auditRows(t, s)
	if len(rows) != 1 || rows[0] != "cleanup | oncall@example.com | INC-9 bloat | deleted=0 batch=500" {
		t.Errorf("audit after op cleanup = %q, want one cleanup row by oncall@example.com with the reason", rows)
	}
}

// TestRepairsNameTheMissingFlag: a repair without a reason or an operator
// is refused before anything changes, with the flag to add, not with the
// store's internal error.
func TestRepairsNameTheMissingFlag(t *testing.T) {
	dsn, s, rec := storeWithRecord(t, "demo/demo")
	op := rec.OperationID.String()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"cleanup without reason", []string{"op", "cleanup"}, "--reason"},
		{"purge without reason", []string{"op", "purge", "--actor", "demo/demo"}, "--reason"},
		{"reconcile without reason", []string{"op", "reconcile", op, "--not-run"}, "--reason"},
		{"cleanup without operator", []string{"op", "cleanup", "--operator", "", "--reason", "x"}, "--operator"},
		{"reconcile --ran without status", []string{"op", "reconcile", op, "--ran", "--reason", "x"}, "--status"},
		{"reconcile --not-run with status", []string{"op", "reconcile", op, "--not-run", "--status", "201", "--reason", "x"}, "--ran"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := idemctl(t, append(tt.args, "--dsn", dsn)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "sqlstore:") {
				t.Errorf("%v: err = %v, want an error naming %s", tt.args, err, tt.want)
			}
		})
	}
	if rows := auditRows(t, s); len(rows) != 0 {
		t.Errorf("refused repairs left audit rows: %q", rows)
	}
	if got, err := s.Read(context.Background(), rec.Scope); err != nil || got.Purged || got.Version != rec.Version {
		t.Errorf("refused repairs changed the record: %+v, %v", got, err)
	}
}

// TestGetIsAReadThatNeedsNoReason: looking an operation up is not a
// repair; it works without --reason, and without $USER.
func TestGetIsAReadThatNeedsNoReason(t *testing.T) {
	t.Setenv("USER", "")
	dsn, s, rec := storeWithRecord(t, "demo/demo")
	out, err := idemctl(t, "op", "get", rec.OperationID.String(), "--dsn", dsn, "-o", "json")
	if err != nil {
		t.Fatalf("op get without --reason or $USER: %v", err)
	}
	var got struct {
		OperationID string `json:"operation_id"`
		State       string `json:"state"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.OperationID != rec.OperationID.String() || got.State != "COMPLETED" {
		t.Fatalf("op get printed %q (%v)", out, err)
	}
	rows := auditRows(t, s)
	if len(rows) != 1 || !strings.HasPrefix(rows[0], "lookup | ") {
		t.Errorf("audit after op get = %q, want the access recorded", rows)
	}
	if _, err := idemctl(t, "op", "get", "not-a-uuid", "--dsn", dsn); err == nil || strings.Contains(err.Error(), "repair") {
		t.Errorf("op get of a bad id = %v, want an error about the id that does not call a read a repair", err)
	}
}

// TestPurgeRefusesABareSubject: the actor scope is TENANT/SUBJECT; a bare
// subject ("demo") matched nothing and reported success. It must be
// refused, naming the scope that holds the subject's records.
func TestPurgeRefusesABareSubject(t *testing.T) {
	dsn, s, rec := storeWithRecord(t, "demo/demo")
	_, err := idemctl(t, "op", "purge", "--actor", "demo", "--reason", "GDPR-1", "--dsn", dsn)
	if err == nil || !strings.Contains(err.Error(), "--actor demo/demo") {
		t.Fatalf("op purge --actor demo = %v, want a refusal suggesting --actor demo/demo", err)
	}
	for _, bad := range []string{"/demo", "demo/", "demo/a/b"} {
		if _, err := idemctl(t, "op", "purge", "--actor", bad, "--reason", "GDPR-1", "--dsn", dsn); err == nil {
			t.Errorf("op purge --actor %q accepted", bad)
		}
	}
	if got, _ := s.Read(context.Background(), rec.Scope); got.Purged {
		t.Fatal("a refused purge purged the record")
	}
	out, err := idemctl(t, "op", "purge", "--actor", "demo/demo", "--reason", "GDPR-1", "--dsn", dsn)
	if err != nil || !strings.Contains(out, "actor demo/demo: purged 1 records") {
		t.Fatalf("op purge --actor demo/demo = %q, %v", out, err)
	}
	if got, _ := s.Read(context.Background(), rec.Scope); !got.Purged {
		t.Error("record not purged")
	}
}

// TestOpFindShowsACompactedRecordAsAMarker: after the endpoint's
// replay_ttl cleanup compacts a finished record to its dedup marker, and
// op find says so (tier marker) with what the marker keeps: the operation,
// its state and status, and the resource id.
func TestOpFindShowsACompactedRecordAsAMarker(t *testing.T) {
	ctx := context.Background()
	db := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	const actor = "demo/demo"
	dsn, s, rec := recordStore(t, actor, "order-9", db, func(r *store.ClaimRequest) {
		r.TTL, r.ReplayTTL = 30*24*time.Hour, time.Hour
	}, store.Snapshot{Status: 201, ResourceID: "pay_9", Body: []byte(`{"id":"pay_9"}`)})
	find := func() map[string]any {
		t.Helper()
		out, err := idemctl(t, "op", "find", "--actor", actor, "--endpoint", "create-payment", "--key", "order-9",
			"--dsn", dsn, "-o", "json")
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return got
	}
	if got := find(); got["tier"] != "full" || got["resource_id"] != "pay_9" {
		t.Fatalf("before replay_ttl: tier %v resource_id %v, want full pay_9", got["tier"], got["resource_id"])
	}
	db.Advance(2 * time.Hour)
	if n, err := s.Cleanup(ctx, 100); err != nil || n != 1 {
		t.Fatalf("cleanup after replay_ttl: %d, %v; want the record compacted", n, err)
	}
	got := find()
	if got["tier"] != "marker" || got["resource_id"] != "pay_9" || got["state"] != "COMPLETED" ||
		got["status"] != float64(201) || got["operation_id"] != rec.OperationID.String() {
		t.Fatalf("after compaction: %v, want tier marker with the operation, COMPLETED, 201 and pay_9", got)
	}
	out, err := idemctl(t, "op", "find", "--actor", actor, "--endpoint", "create-payment", "--key", "order-9", "--dsn", dsn)
	if err != nil || !strings.Contains(out, "marker") {
		t.Fatalf("the table does not show the tier: %q %v", out, err)
	}
}
