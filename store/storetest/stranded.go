package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/store"
)

// anyStranded asks for every stranded operation of the test endpoint.
var anyStranded = store.StrandedScan{Runnable: []store.Runnable{{Endpoints: []string{"POST /v1/payments"}, AllShards: true}},
	Limit: 10}

// TestStrandedOffersOnlyWhatTheCallerMayRunAndPagesOn: the scan returns
// only the operations of the endpoints and shards the caller says it may
// run, so work held elsewhere never fills a page; and a page resumed
// after the last operation of the previous one starts with what follows
// it, so what the caller skipped never comes back first.
func (h suite) TestStrandedOffersOnlyWhatTheCallerMayRunAndPagesOn(t *testing.T) {
	ctx := context.Background()
	clock := NewClock()
	s := h.Open(t, clock)
	queue := func(actor, endpoint, key string) uuid.UUID {
		req := Request(t, actor, key, `{}`)
		req.Scope.Endpoint = endpoint
		req.Pending = true
		c := MustBegin(t, s, req, store.FirstRun)
		if err := s.SaveRequest(ctx, c.Lease, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second) // each expires after the one before
		return c.Lease.OperationID
	}
	const pay, export = "POST /v1/payments", "POST /v1/exports"
	alice, bob := "tenant/alice", "tenant/bob"
	aliceShard, bobShard := shard.Of(alice, shard.DefaultCount), shard.Of(bob, shard.DefaultCount)
	if aliceShard == bobShard {
		t.Fatal("setup: alice and bob share a shard")
	}
	a, b, c := queue(alice, pay, "a"), queue(bob, pay, "b"), queue(alice, export, "c")
	clock.Advance(31 * time.Second)

	ids := func(scan store.StrandedScan) []uuid.UUID {
		t.Helper()
		got, err := s.Stranded(ctx, scan)
		if err != nil {
			t.Fatal(err)
		}
		out := []uuid.UUID{}
		for _, q := range got {
			out = append(out, q.Record.OperationID)
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		runnable []store.Runnable
		want     []uuid.UUID
	}{
		{"nothing runnable", nil, []uuid.UUID{}},
		{"one endpoint on every shard", []store.Runnable{{Endpoints: []string{pay}, AllShards: true}}, []uuid.UUID{a, b}},
		{"one endpoint on one shard", []store.Runnable{{Endpoints: []string{pay}, Shards: []int{aliceShard}}}, []uuid.UUID{a}},
		{"an endpoint on no shard", []store.Runnable{{Endpoints: []string{pay}}}, []uuid.UUID{}},
		{"two shares", []store.Runnable{{Endpoints: []string{pay}, Shards: []int{bobShard}},
			{Endpoints: []string{export}, AllShards: true}}, []uuid.UUID{b, c}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ids(store.StrandedScan{Runnable: tc.runnable, Limit: 10})); diff != "" {
				t.Errorf("stranded (-want +got):\n%s", diff)
			}
		})
	}

	every := []store.Runnable{{Endpoints: []string{pay, export}, AllShards: true}}
	var after store.Cursor
	var paged []uuid.UUID
	for range 4 {
		got, err := s.Stranded(ctx, store.StrandedScan{Runnable: every, After: after, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		paged = append(paged, got[0].Record.OperationID)
		after = got[0].Cursor()
	}
	if diff := cmp.Diff([]uuid.UUID{a, b, c}, paged); diff != "" {
		t.Errorf("pages of one (-want +got):\n%s", diff)
	}
}
