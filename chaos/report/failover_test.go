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

// TestFailoverAndInFlightTimesRunFromTheRegionsDeathNotFromTheKillsHold:
// a kill first holds the region's upstream for a second (so calls are in
// flight when it dies), then kills it. Us-east's fault begins at 10 s
// and takes effect (the process reaped) at 11 s; actor a, owned by
// us-east, had a call in flight there that lost its answer at 11 s, and
// its retry is served by eu-west at 13.5 s. Both its failover time and
// its in-flight intent's time are 2.5 s, from the region's death, not
// 3.5 s from the start of the hold, in which the region still served.
func TestFailoverAndInFlightTimesRunFromTheRegionsDeathNotFromTheKillsHold(t *testing.T) {
	at := func(s float64) int64 { return int64(s * float64(time.Second)) }
	ops := []history.Operation{
		{Kind: history.KindRequest, Actor: "demo/a", Shard: 1, Intent: 1, Call: at(9), Return: at(9.1), Status: 201, ServedBy: "us-east"},
		{Kind: history.KindRequest, Actor: "demo/a", Shard: 1, Intent: 2, Call: at(10.2), Return: at(11), Error: history.ErrAfterSend},
		{Kind: history.KindRequest, Actor: "demo/a", Shard: 1, Intent: 2, Call: at(13.4), Return: at(13.5), Status: 201, ServedBy: "eu-west"},
		{Kind: history.KindFault, Call: at(10), Effective: at(11), Return: at(20), SentTo: "us-east", Shard: -1,
			Fault: "kill_region", Detail: "kill_region us-east for 8s"},
	}
	for i := range ops {
		ops[i].Seq = int64(i + 1)
	}
	in := synthetic()
	in.History = history.History{Ops: ops}
	r := Build(in)
	want := []time.Duration{2500 * time.Millisecond}
	if got := r.Faults[0].Failover; !slices.Equal(got, want) {
		t.Errorf("failover times = %v, want %v (from the kill's effect at 11 s)", got, want)
	}
	if got := r.Faults[0].InFlight; !slices.Equal(got, want) {
		t.Errorf("in-flight resolution times = %v, want %v (from the kill's effect at 11 s)", got, want)
	}
}
