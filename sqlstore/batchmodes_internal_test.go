package sqlstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/store"
	"github.com/idemcoord/idemcoord/store/storetest"
)

// TestBatchesRunInEveryQueryExecMode: a batched claim and a batched
// finish insert and finish every member whatever protocol the DSN asks
// pgx for (default_query_exec_mode: prepared and binary, described, or
// text only, as a transaction pooler needs), so their array arguments
// encode without the statement's parameter types too, and a later claim
// of each key replays the stored answer.
func TestBatchesRunInEveryQueryExecMode(t *testing.T) {
	ctx := context.Background()
	for _, mode := range execModes {
		t.Run(mode, func(t *testing.T) {
			s := openInExecMode(t, mode)
			const n = 4
			var (
				claims []*member[claimJob]
				reqs   = make([]store.ClaimRequest, n)
				recs   = make([]store.Record, n)
			)
			for i := range n {
				reqs[i] = storetest.Request(t, fmt.Sprintf("tenant/a%d", i), fmt.Sprintf("key-%d", i), `{"amount":"1"}`)
				if i == 1 {
					reqs[i].FirstSent = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
				}
				claims = append(claims, &member[claimJob]{
					key: memberKey{reqs[i].Scope.Actor, reqs[i].Scope.Endpoint, reqs[i].Scope.Key.Hash()},
					req: claimJob{req: reqs[i], owner: fmt.Sprintf("w/%d", i), opID: newOperationID(false),
						state: idempotency.InProgress, rec: &recs[i]}})
			}
			s.claimBatch(ctx, claims)
			var finishes []*member[finishJob]
			for i, m := range claims {
				if !m.req.inserted || m.req.err != nil {
					t.Fatalf("claim %d: inserted %v, err %v", i, m.req.inserted, m.req.err)
				}
				rec := claimedRecord(reqs[i], m.req.owner, m.req.opID, m.req.state, m.req.now)
				l := newLease(rec, reqs[i])
				res := storetest.Completed(fmt.Sprintf(`{"id":"pay_%d"}`, i))
				if i == 2 {
					res = store.Result{State: idempotency.TerminalFailure, ErrorSummary: "declined",
						Snapshot: store.Snapshot{Status: 402, Body: []byte(`{}`)}}
				}
				u := s.prepareFinish(l, res)
				finishes = append(finishes, &member[finishJob]{req: finishJob{u: &u}})
			}
			s.finishBatch(ctx, finishes)
			for i, m := range finishes {
				if !m.req.ok || m.req.err != nil || m.req.version != 2 {
					t.Fatalf("finish %d: ok %v, version %d, err %v", i, m.req.ok, m.req.version, m.req.err)
				}
				c, err := s.Begin(ctx, reqs[i])
				if err != nil || c.Outcome != store.Replayed {
					t.Fatalf("claim %d again: %v %v", i, c.Outcome, err)
				}
				if i == 2 && (c.Record.ErrorSummary != "declined" || c.Record.Snapshot.Status != 402) {
					t.Errorf("terminal failure stored as %+v", c.Record)
				}
				if i != 2 && string(c.Record.Snapshot.Body) != fmt.Sprintf(`{"id":"pay_%d"}`, i) {
					t.Errorf("claim %d again replays %q", i, c.Record.Snapshot.Body)
				}
			}
		})
	}
}

// TestSingleStatementsRunInEveryQueryExecMode: a first run whose claim
// and finish run alone (each finds a group-commit slot free) stores its
// answer whatever protocol the DSN asks pgx for, so the single
// statements' pointer arguments (singleargs.go) encode without the
// statements' parameter types too: a completed answer with headers and a
// resource id, and a terminal failure with an error summary and a stage
// (finishStageSQL), each replayed as stored by a later claim.
func TestSingleStatementsRunInEveryQueryExecMode(t *testing.T) {
	ctx := context.Background()
	for _, mode := range execModes {
		t.Run(mode, func(t *testing.T) {
			s := openInExecMode(t, mode)
			failed := store.Result{State: idempotency.TerminalFailure, ErrorSummary: "declined", Stage: "charge_sent",
				Snapshot: store.Snapshot{Status: 402, Body: []byte(`{}`)}}
			for i, res := range []store.Result{storetest.Completed(`{"id":"pay_1"}`), failed} {
				req := storetest.Request(t, fmt.Sprintf("tenant/s%d", i), "key", `{"amount":"1"}`)
				req.FirstSent = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
				c, err := s.Begin(ctx, req)
				if err != nil || c.Outcome != store.FirstRun {
					t.Fatalf("claim %d: %v %v", i, c.Outcome, err)
				}
				if err := s.Finish(ctx, c.Lease, res); err != nil {
					t.Fatalf("finish %d: %v", i, err)
				}
				c, err = s.Begin(ctx, req)
				if err != nil || c.Outcome != store.Replayed {
					t.Fatalf("claim %d again: %v %v", i, c.Outcome, err)
				}
				got := c.Record
				if got.State != res.State || got.Snapshot.Status != res.Snapshot.Status ||
					string(got.Snapshot.Body) != string(res.Snapshot.Body) || got.ErrorSummary != res.ErrorSummary ||
					got.LastStage != res.Stage || !got.FirstSent.Equal(req.FirstSent) {
					t.Errorf("result %d stored as %+v, want %+v", i, got, res)
				}
				if i == 0 && (got.Snapshot.ResourceID != "pay_1" || got.Snapshot.Header.Get("Content-Type") != "application/json") {
					t.Errorf("completed answer stored with resource id %q and headers %v", got.Snapshot.ResourceID, got.Snapshot.Header)
				}
			}
		})
	}
}

// execModes are pgx's default_query_exec_mode values.
var execModes = []string{"cache_statement", "cache_describe", "describe_exec", "exec", "simple_protocol"}

// openInExecMode opens a migrated store on a fresh database whose DSN asks
// pgx for mode, its fences bootstrapped to storetest.Region.
func openInExecMode(t *testing.T, mode string) *Store {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, Config{Migrate: true, DSN: pgtest.NewDatabase(t) + "&default_query_exec_mode=" + mode})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.BootstrapFences(ctx, shard.DefaultCount, func(int) string { return storetest.Region }); err != nil {
		t.Fatal(err)
	}
	return s
}
