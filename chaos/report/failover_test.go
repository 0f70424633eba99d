package report

import (
	"slices"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/chaos/history"
)

// TestFailoverIsMeasuredWithinTheFaultThatMovedTheActor builds a run
// where us-east is crashed twice: at 4 s it comes back (restarted, failed
// back) at 8 s before actor a was ever served elsewhere, and at 20 s a's
// shard moves to eu-west, which serves it at 22 s. Actor b was served by
// us-east only until a planned move took its shard to eu-west at 2 s. A
// failover time is the fault's own: a is 2 s in the second fault and
// nothing in the first (it waited for its region; 18 s from the first
// fault's start is no failover), and b is none of us-east's moved actors.
func TestFailoverIsMeasuredWithinTheFaultThatMovedTheActor(t *testing.T) {
	var ops []history.Operation
	add := func(op history.Operation) {
		op.Seq = int64(len(ops) + 1)
		op.Kind = history.KindRequest
		op.Status, op.Shard = 201, 1
		if op.ServedBy == "" {
			op.Status = 503
		}
		ops = append(ops, op)
	}
	at := func(s float64) int64 { return int64(s * float64(time.Second)) }
	for s := 0.0; s < 24; s++ {
		a := "us-east"
		switch {
		case s >= 4 && s < 8, s >= 20 && s < 22:
			a = "" // 503 while its region is down and its shard not moved
		case s >= 22:
			a = "eu-west"
		}
		add(history.Operation{Call: at(s), Return: at(s + 0.1), Actor: "demo/a", SentTo: "us-east", ServedBy: a})
		b := "us-east"
		if s >= 2 {
			b = "eu-west"
		}
		add(history.Operation{Call: at(s + 0.5), Return: at(s + 0.6), Actor: "demo/b", SentTo: "eu-west", ServedBy: b})
	}
	for _, f := range [][2]float64{{4, 8}, {20, 24}} {
		ops = append(ops, history.Operation{Seq: int64(len(ops) + 1), Kind: history.KindFault, Call: at(f[0]), Return: at(f[1]),
			SentTo: "us-east", Shard: -1, Fault: "crash_point", Detail: "crash_point us-east at after_claim"})
	}
	in := synthetic()
	in.History = history.History{Ops: ops}
	r := Build(in)
	if len(r.Faults) != 2 {
		t.Fatalf("fault windows: %+v", r.Faults)
	}
	if got := r.Faults[0].Failover; len(got) != 0 {
		t.Errorf("first fault's failover times = %v, want none: nobody was served elsewhere before its region came back", got)
	}
	if got, want := r.Faults[1].Failover, []time.Duration{2100 * time.Millisecond}; !slices.Equal(got, want) {
		t.Errorf("second fault's failover times = %v, want %v", got, want)
	}
}
