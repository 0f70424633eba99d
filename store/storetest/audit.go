package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/store"
)

func (h suite) TestQueryAuditFiltersBySinceAndShardWithoutPrefixCollisions(t *testing.T) {
	ctx := context.Background()
	clk := NewClock()
	s := h.Open(t, clk)
	if err := s.Audit(ctx, "alice", "region_failover", "old", "region=us-east"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	start := clk.Now()
	for _, shard := range []int{1, 10} {
		if err := s.MoveFence(ctx, fencing.Move{Shard: shard, From: 1, To: "eu-west", Operator: "bob", Reason: "move"}); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second) // rows are ordered by time; ties have no order
	}
	if err := s.Audit(ctx, "carol", "failover_accept", "reconciled", `shard=1 epoch=2 owner="eu-west"`); err != nil {
		t.Fatal(err)
	}
	one := 1
	tests := []struct {
		name string
		f    store.AuditFilter
		want []string // action/operator, newest first
	}{
		{"everything", store.AuditFilter{}, []string{"failover_accept/carol", "move_fence/bob", "move_fence/bob", "region_failover/alice"}},
		{"since", store.AuditFilter{Since: start}, []string{"failover_accept/carol", "move_fence/bob", "move_fence/bob"}},
		{"shard 1 not 10", store.AuditFilter{Shard: &one}, []string{"failover_accept/carol", "move_fence/bob"}},
		{"limit", store.AuditFilter{Limit: 1}, []string{"failover_accept/carol"}},
		{"actor", store.AuditFilter{Actor: "tenant/nobody"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := s.QueryAudit(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rows {
				got = append(got, r.Action+"/"+r.Operator)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %q, want %q", got, tc.want)
				}
			}
		})
	}
}

func (h suite) TestAuditRequiresOperatorAndReason(t *testing.T) {
	s := h.Open(t, nil)
	if err := s.Audit(context.Background(), "", "x", "why", ""); !errors.Is(err, store.ErrNoOperator) {
		t.Fatalf("Audit without operator: %v", err)
	}
}
