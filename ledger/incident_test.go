package ledger_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/ledger"
	"github.com/idemcoord/idemcoord/store"
)

// TestIncidentsFromTheAuditHaveTheirMovesWindowsAndEnds: a controller
// failover of east (its fence moves, then its row), an operator's accept
// of two of its shards a minute later (one row per shard), a failback of
// east, and a move by hand make four incidents and one manual move: the
// failover's window runs from its first move until the accept that ended
// it, the accepts are one incident, the failback's window is its moves'.
func TestIncidentsFromTheAuditHaveTheirMovesWindowsAndEnds(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 14, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	row := func(s int, op, action, reason, detail string) store.AuditRow {
		return store.AuditRow{ID: uuid.New(), At: at(s), Operator: op, Action: action, Reason: reason, Detail: detail}
	}
	rows := []store.AuditRow{
		row(1, "controller", "move_fence", "east failed", `shard=3 epoch 1->2 to="west"`),
		row(2, "controller", "move_fence", "east failed", `shard=5 epoch 4->5 to="west"`),
		row(3, "controller", "region_failover", "east failed", "region=east shards_moved=2 of 2"),
		row(60, "ann", "failover_accept", "INC-1 reconciled", `shard=3 epoch=2 owner="west" FAILED_OVER->ACTIVE`),
		row(61, "ann", "failover_accept", "INC-1 reconciled", `shard=5 epoch=5 owner="west" FAILED_OVER->ACTIVE`),
		row(120, "bob", "move_fence", "INC-1 home", `shard=3 epoch 2->3 to="east"`),
		row(121, "bob", "failback", "INC-1 home", "region=east shards_moved=1 of 1"),
		row(200, "cy", "move_fence", "rebalance", `shard=9 epoch 1->2 to="eu"`),
		row(250, "cy", "lookup", "curious", ""),
	}
	got := ledger.Incidents(rows, at(1000))
	want := []string{
		"failover east 1..60 shards=[3 5] open=false ended_by=accept",
		"accept west 60..61 shards=[3 5] open=false ended_by=",
		"failback east 120..121 shards=[3] open=false ended_by=",
		"move eu 200..200 shards=[9] open=false ended_by=",
	}
	if len(got) != len(want) {
		t.Fatalf("%d incidents, want %d: %+v", len(got), len(want), got)
	}
	kindOf := map[string]string{}
	for _, in := range got {
		kindOf[in.ID] = in.Kind
	}
	for i, in := range got {
		s := fmt.Sprintf("%s %s %d..%d shards=%v open=%v ended_by=%s", in.Kind, in.Region, int(in.From.Sub(t0).Seconds()),
			int(in.To.Sub(t0).Seconds()), in.Shards, in.Open, kindOf[in.EndedBy])
		if s != want[i] {
			t.Errorf("incident %d: %s\nwant        %s", i, s, want[i])
		}
	}
	w := ledger.WindowOf(got[0])
	if mv := w.Moves[5]; mv.FromEpoch != 4 || mv.ToEpoch != 5 || mv.To != "west" || len(w.Moves) != 2 {
		t.Errorf("failover window's moves %+v", w.Moves)
	}

	// Without the accept and the failback the failover is still open.
	open := ledger.Incidents(rows[:3], at(1000))
	if len(open) != 1 || !open[0].Open || !open[0].To.Equal(at(1000)) {
		t.Errorf("a failover nothing ended: %+v, want open until now", open)
	}
}
