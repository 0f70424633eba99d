package sqlstore_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

func TestPurgeKeepsDedupMarker(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t, newClock())
	createPayments(t, s)
	aliceDone := request(t, "tenant/alice", "purge-completed", `{"amount":"1"}`)
	aliceFailed := request(t, "tenant/alice", "purge-terminal", `{"amount":"2"}`)
	aliceBusy := request(t, "tenant/alice", "purge-in-progress", `{"amount":"3"}`)
	bob := request(t, "tenant/bob", "purge-completed", `{"amount":"1"}`)
	doneRec := withState(t, s, aliceDone, idempotency.Completed)
	withState(t, s, aliceFailed, idempotency.TerminalFailure)
	withState(t, s, aliceBusy, idempotency.InProgress)
	withState(t, s, bob, idempotency.Completed)
	bobBefore := rowOf(t, s, "tenant/bob")

	if _, err := s.Purge(ctx, "", "no operator", "tenant/alice"); err == nil {
		t.Fatal("purge without an operator succeeded, want an error")
	}
	if rec, _ := s.Read(ctx, aliceDone.Scope); rec.Purged || len(rec.Snapshot.Body) == 0 {
		t.Fatalf("a refused purge changed the record: purged %v body %q", rec.Purged, rec.Snapshot.Body)
	}

	n, err := s.Purge(ctx, "oncall@example.com", "erasure request 42", "tenant/alice")
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("purged %d records, want 3 (the in-progress one too: it stays purged when it finishes)", n)
	}
	for _, sc := range []store.Scope{aliceDone.Scope, aliceFailed.Scope, aliceBusy.Scope} {
		rec, err := s.Read(ctx, sc)
		if err != nil {
			t.Fatal(err)
		}
		if !rec.Purged || rec.Snapshot.Body != nil || rec.Snapshot.Header != nil || rec.ErrorSummary != "" {
			t.Errorf("%s: purged %v body %q header %v summary %q, want purged with no body, headers or summary",
				sc.Key, rec.Purged, rec.Snapshot.Body, rec.Snapshot.Header, rec.ErrorSummary)
		}
	}
	if after := rowOf(t, s, "tenant/bob"); after != bobBefore {
		t.Errorf("bob's record changed by alice's purge:\nbefore %s\nafter  %s", bobBefore, after)
	}

	// The marker still dedups: a late retry is replayed, never run again.
	r := mustBegin(t, s, aliceDone, store.Replayed)
	if !r.Record.Purged || r.Record.OperationID != doneRec.OperationID || r.Record.Fingerprint != doneRec.Fingerprint {
		t.Errorf("replay of a purged key: purged %v op %v fp %v, want the original marker", r.Record.Purged, r.Record.OperationID, r.Record.Fingerprint)
	}
	var calls atomic.Int64
	c, err := s.RunLocal(ctx, aliceDone, pay("1", &calls))
	if err != nil || c.Outcome != store.Replayed || calls.Load() != 0 {
		t.Errorf("RunLocal retry of a purged key = %v, %v, LocalFunc ran %d times; want replay, not run", c.Outcome, err, calls.Load())
	}
	other := request(t, "tenant/alice", "purge-completed", `{"amount":"999"}`)
	mustBegin(t, s, other, store.Mismatch)

	log, err := s.AuditLog(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.AuditEntry{{Operator: "oncall@example.com", Action: "purge", Reason: "erasure request 42",
		ActorScope: "tenant/alice", Detail: "records=3"}}
	ignoreID := cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".ID" }, cmp.Ignore())
	if diff := cmp.Diff(want, log, ignoreID); diff != "" {
		t.Errorf("audit log (-want +got):\n%s", diff)
	}
}

// rowOf returns an actor's only record as text, byte for byte.
func rowOf(t *testing.T, s *sqlstore.Store, actor string) string {
	t.Helper()
	var row string
	if err := s.Pool().QueryRow(context.Background(),
		`SELECT r::text FROM idempotency_records r WHERE actor_scope = $1`, actor).Scan(&row); err != nil {
		t.Fatal(err)
	}
	return row
}
