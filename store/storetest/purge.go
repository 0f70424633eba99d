package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/store"
)

// TestPurgeSticksThroughLaterFinishAndResolve: an actor's data purged while
// one operation was still running and another's outcome was unknown stays
// purged when the worker later finishes, and when the unknown outcome is
// later resolved (by a retry or by an operator): the state and status are
// recorded, the body, headers and error summary never again.
func (h suite) TestPurgeSticksThroughLaterFinishAndResolve(t *testing.T) {
	ctx := context.Background()
	s := h.Open(t, NewClock())
	running := MustBegin(t, s, Request(t, "tenant/alice", "purge-running", `{"amount":"1"}`), store.FirstRun)
	_, unknown := unknownRecord(t, s, "purge-unknown")
	_, reconciled := unknownRecord(t, s, "purge-reconciled")

	n, err := s.Purge(ctx, "oncall@example.com", "erasure request 7", "tenant/alice")
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("purged %d records, want all 3", n)
	}

	if err := s.Finish(ctx, running.Lease, Completed(`{"card":"4242"}`)); err != nil {
		t.Fatalf("the running worker's Finish after the purge: %v", err)
	}
	tok := unknown.Token
	tok.Region = Region // the resolver's own token, as the gateway passes it
	if err := s.Resolve(ctx, unknown, tok, Completed(`{"card":"4242"}`)); err != nil {
		t.Fatalf("Resolve after the purge: %v", err)
	}
	res := Completed(`{"card":"4242"}`)
	res.ErrorSummary = "found by hand for alice"
	if err := s.ReconcileUnknown(ctx, "oncall@example.com", "ticket 8", reconciled.OperationID, res); err != nil {
		t.Fatalf("ReconcileUnknown after the purge: %v", err)
	}
	want := "COMPLETED status=201 purged=true body=false headers=false summary=false"
	for name, id := range map[string]uuid.UUID{"finished": running.Lease.OperationID,
		"resolved": unknown.OperationID, "reconciled": reconciled.OperationID} {
		if got := storedFields(t, s, "tenant/alice", id); got != want {
			t.Errorf("%s after the purge: %s, want %s", name, got, want)
		}
	}
}

// TestFinishStoresBodyOfUnpurgedRecord: the rule that keeps a purged record
// purged leaves every other record's result whole.
func (h suite) TestFinishStoresBodyOfUnpurgedRecord(t *testing.T) {
	ctx := context.Background()
	s := h.Open(t, NewClock())
	c := MustBegin(t, s, Request(t, "tenant/alice", "not-purged", `{}`), store.FirstRun)
	res := Completed(`{"ok":true}`)
	if err := s.Finish(ctx, c.Lease, res); err != nil {
		t.Fatal(err)
	}
	if got, want := storedFields(t, s, "tenant/alice", c.Lease.OperationID), "COMPLETED status=201 purged=false body=true headers=true summary=false"; got != want {
		t.Errorf("record %s, want %s", got, want)
	}
}

// storedFields says what a record holds of a response.
func storedFields(t *testing.T, s store.Backend, actor string, opID uuid.UUID) string {
	t.Helper()
	rec, err := s.Lookup(context.Background(), actor, opID)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s status=%d purged=%v body=%v headers=%v summary=%v", rec.State, rec.Snapshot.Status, rec.Purged,
		rec.Snapshot.Body != nil, rec.Snapshot.Header != nil, rec.ErrorSummary != "")
}
