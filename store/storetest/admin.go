package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// TestAuditedCleanupRecordsTheDeletionInItsTransaction: an operator's
// cleanup is a repair, so its deletion and the audit row naming who, why
// and how many commit together; without an operator or a reason nothing is
// deleted.
func (h suite) TestAuditedCleanupRecordsTheDeletionInItsTransaction(t *testing.T) {
	ctx := context.Background()
	clock := NewClock()
	s := h.Open(t, clock)
	var last store.Record
	for _, key := range []string{"a", "b", "c"} {
		last = WithState(t, s, Request(t, "tenant/alice", key, `{}`), idempotency.Completed)
	}
	clock.Set(last.ExpiresAt)

	if _, err := s.AuditedCleanup(ctx, "oncall", "", 10); !errors.Is(err, store.ErrNoOperator) {
		t.Fatalf("AuditedCleanup without a reason = %v, want ErrNoOperator", err)
	}
	if n := records(t, s); n != 3 {
		t.Fatalf("a refused cleanup deleted records: %d left, want 3", n)
	}

	var deleted []int
	for {
		n, err := s.AuditedCleanup(ctx, "oncall@example.com", "INC-7: table bloat", 2)
		if err != nil {
			t.Fatal(err)
		}
		deleted = append(deleted, n)
		if n < 2 {
			break
		}
	}
	if diff := cmp.Diff([]int{2, 1}, deleted); diff != "" {
		t.Errorf("deleted per batch (-want +got):\n%s", diff)
	}
	log, err := s.AuditLog(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range log {
		if e.Action != "cleanup" || e.Operator != "oncall@example.com" || e.Reason != "INC-7: table bloat" {
			t.Errorf("audit row %+v: want action cleanup by oncall@example.com with the reason", e)
		}
		got = append(got, e.Detail)
	}
	if diff := cmp.Diff([]string{"deleted=1 batch=2", "deleted=2 batch=2"}, sorted(got)); diff != "" {
		t.Errorf("audit details (-want +got):\n%s", diff)
	}
}

// sorted returns a sorted copy of ss (rows written in one clock tick have
// no order).
func sorted(ss []string) []string {
	out := slices.Clone(ss)
	slices.Sort(out)
	return out
}

// TestActorScopesFindsScopesBySubject: an operator who names an actor by
// its subject alone ("demo") is told the scopes that hold its records.
func (h suite) TestActorScopesFindsScopesBySubject(t *testing.T) {
	ctx := context.Background()
	s := h.Open(t, NewClock())
	for _, actor := range []string{"demo/demo", "acme/demo", "demo/alice", "x/ademo"} {
		WithState(t, s, Request(t, actor, "k", `{}`), idempotency.Completed)
	}
	got, err := s.ActorScopes(ctx, "demo", 10)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"acme/demo", "demo/demo"}, got); diff != "" {
		t.Errorf("ActorScopes(demo) (-want +got):\n%s", diff)
	}
}
