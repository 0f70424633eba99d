package report

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/chaos/history"
)

// TestAvailabilityIsCountedPerClientCallAndOwnerClass builds a run where
// us-east dies from 10 s to 20 s. Actor a (owned by us-east) had an
// intent in flight there: its attempt lost its answer at 10.5 s, its
// retry got a 503 at 12.1 s and its next one a success from eu-west at
// 13.1 s; its next intent got a 504 from eu-west at 14.5 s and a success
// at 16 s. Actor b (owned by eu-west) made one SDK
// call at 11 s whose first attempt to us-east was refused and whose
// second, at once, was served by eu-west, then a call at 15 s with a
// changed body, rightly answered 422. The user saw b answered every time
// (2 of 2 calls, not 2 of 3 attempts), a answered in 2 of 5 calls, and
// a's in-flight intent answered 3.1 s after the fault began. The 504 at
// 14.5 s is not the lost region's in-flight work: a was served by
// eu-west since 13.1 s, so that intent's unknown outcome was eu-west's (a
// drill cutting its calls at the end of its main phase looks the same),
// and counting it made in_flight_resolved_p99 the settle phase's time.
func TestAvailabilityIsCountedPerClientCallAndOwnerClass(t *testing.T) {
	var ops []history.Operation
	at := func(s float64) int64 { return int64(s * float64(time.Second)) }
	add := func(op history.Operation) {
		op.Seq, op.Kind = int64(len(ops)+1), history.KindRequest
		ops = append(ops, op)
	}
	a := func(call, ret float64, intent int64, status int, servedBy string, e history.ErrorClass) {
		add(history.Operation{ClientID: 0, Actor: "demo/a", Shard: 1, Intent: intent, Call: at(call), Return: at(ret),
			Status: status, ServedBy: servedBy, Error: e})
	}
	b := func(call, ret float64, intent, clientCall int64, status int, servedBy string, e history.ErrorClass) {
		add(history.Operation{ClientID: 1, Actor: "demo/b", Shard: 2, Intent: intent, ClientCall: clientCall,
			Call: at(call), Return: at(ret), Status: status, ServedBy: servedBy, Error: e})
	}
	a(8, 8.1, 4, 201, "us-east", "")
	b(8, 8.1, 1, 1, 201, "eu-west", "")
	a(9.5, 10.5, 5, 0, "", history.ErrAfterSend)
	b(11, 11.01, 2, 2, 0, "", history.ErrBeforeSend)
	b(11.01, 11.1, 2, 2, 201, "eu-west", "")
	a(12, 12.1, 5, 503, "", "")
	a(13, 13.1, 5, 201, "eu-west", "")
	b(15, 15.1, 3, 3, 422, "eu-west", "")
	a(14, 14.5, 6, 504, "eu-west", "")
	a(14.6, 16, 6, 201, "eu-west", "")
	ops = append(ops, history.Operation{Seq: int64(len(ops) + 1), Kind: history.KindFault, Call: at(10), Return: at(20),
		SentTo: "us-east", Shard: -1, Fault: "kill_region", Detail: "kill_region us-east for 8s"})
	in := synthetic()
	in.History = history.History{Ops: ops}
	r := Build(in)
	if got, want := r.Unaffected, (Availability{Calls: 2, OK: 2}); got != want {
		t.Errorf("unaffected availability = %+v, want %+v: one SDK call is one call, however many attempts", got, want)
	}
	if got, want := r.Affected, (Availability{Calls: 5, OK: 2}); got != want {
		t.Errorf("affected availability = %+v, want %+v", got, want)
	}
	got := slices.Clone(r.Faults[0].InFlight)
	slices.Sort(got)
	if want := []time.Duration{3100 * time.Millisecond}; !slices.Equal(got, want) {
		t.Errorf("in-flight resolution times = %v, want %v", got, want)
	}
	if r.InFlight.P99 != 3100*time.Millisecond {
		t.Errorf("in-flight p99 = %v, want 3.1s", r.InFlight.P99)
	}
	var text strings.Builder
	r.WriteText(&text)
	for _, want := range []string{"unaffected actors 1.0000 (2/2), affected actors 0.4000 (2/5)", "in-flight intents of the lost region (region out -> final answer, n=1): p50 3.1s"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text summary lacks %q:\n%s", want, text.String())
		}
	}
	var html strings.Builder
	if err := r.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="availability-unaffected"`, "1.0000 (2/2)", "0.4000 (2/5)", `id="in-flight"`} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("HTML report lacks %q", want)
		}
	}
}

// TestACallTheDrillCutAtTheEndOfItsMainPhaseCountsNowhere: a window lasts
// until its heal completed, often past the end of the drill's main phase,
// where the drill ends every call still waiting (history.Operation.Cut).
// Such a call of an unaffected actor is not a call the cluster failed to
// answer: availability stays 1 of 1, and the affected actor's cut call
// after its failover is no in-flight intent either.
func TestACallTheDrillCutAtTheEndOfItsMainPhaseCountsNowhere(t *testing.T) {
	at := func(s float64) int64 { return int64(s * float64(time.Second)) }
	ops := []history.Operation{
		{ClientID: 0, Actor: "demo/a", Shard: 1, Intent: 1, Call: at(8), Return: at(8.1), Status: 201, ServedBy: "us-east"},
		{ClientID: 1, Actor: "demo/b", Shard: 2, Intent: 1, Call: at(8), Return: at(8.1), Status: 201, ServedBy: "eu-west"},
		{ClientID: 1, Actor: "demo/b", Shard: 2, Intent: 2, Call: at(12), Return: at(12.1), Status: 201, ServedBy: "eu-west"},
		{ClientID: 0, Actor: "demo/a", Shard: 1, Intent: 2, Call: at(13), Return: at(13.1), Status: 201, ServedBy: "eu-west"},
		{ClientID: 1, Actor: "demo/b", Shard: 2, Intent: 3, Call: at(15), Return: at(15.2), Error: history.ErrTimeout, Cut: true},
		{ClientID: 0, Actor: "demo/a", Shard: 1, Intent: 3, Call: at(15), Return: at(15.2), Error: history.ErrTimeout, Cut: true},
		{ClientID: 0, Actor: "demo/a", Shard: 1, Intent: 3, Call: at(25), Return: at(25.1), Status: 201, ServedBy: "eu-west"},
		{Kind: history.KindFault, Call: at(10), Effective: at(11), Return: at(20), SentTo: "us-east", Shard: -1,
			Fault: "kill_region", Detail: "kill_region us-east for 8s"},
	}
	for i := range ops {
		ops[i].Seq = int64(i + 1)
		if ops[i].Kind == "" {
			ops[i].Kind = history.KindRequest
		}
	}
	in := synthetic()
	in.History = history.History{Ops: ops}
	r := Build(in)
	if got, want := r.Unaffected, (Availability{Calls: 1, OK: 1}); got != want {
		t.Errorf("unaffected availability = %+v, want %+v: the cut call was due no answer", got, want)
	}
	if got, want := r.Affected, (Availability{Calls: 1, OK: 1}); got != want {
		t.Errorf("affected availability = %+v, want %+v", got, want)
	}
	if len(r.Faults[0].InFlight) != 0 {
		t.Errorf("in-flight resolution times = %v, want none", r.Faults[0].InFlight)
	}
}

// TestAnIntentAnsweredBeforeTheRegionWasLostIsNotInFlight: a fault whose
// effect comes a second after it starts (the kill's hold of the region's
// answers, a pause's lead-in) has calls that span its start and end with
// their final answer before the region is lost. They were never stuck in
// the lost region, and counting them gave in_flight_resolved_p99 = -1 s
// in zombie-pause entry drills. Only an intent resolved at or after the
// loss is in-flight work.
func TestAnIntentAnsweredBeforeTheRegionWasLostIsNotInFlight(t *testing.T) {
	at := func(s float64) int64 { return int64(s * float64(time.Second)) }
	var ops []history.Operation
	add := func(call, ret float64, intent int64, status int, servedBy string, e history.ErrorClass) {
		ops = append(ops, history.Operation{Seq: int64(len(ops) + 1), Kind: history.KindRequest, Actor: "demo/a", Shard: 1,
			Intent: intent, Call: at(call), Return: at(ret), Status: status, ServedBy: servedBy, Error: e})
	}
	add(8, 8.1, 1, 201, "us-east", "")
	add(9.9, 10.02, 2, 201, "us-east", "")          // spans the fault's start, answered before the loss
	add(10.5, 11.5, 3, 0, "", history.ErrAfterSend) // sent, then the region was lost
	add(12, 13.5, 3, 201, "eu-west", "")
	ops = append(ops, history.Operation{Seq: int64(len(ops) + 1), Kind: history.KindFault, Call: at(10), Effective: at(11),
		Return: at(20), SentTo: "us-east", Shard: -1, Fault: "kill_region", Detail: "kill_region us-east for 8s"})
	in := synthetic()
	in.History = history.History{Ops: ops}
	r := Build(in)
	got := slices.Clone(r.Faults[0].InFlight)
	slices.Sort(got)
	if want := []time.Duration{2500 * time.Millisecond}; !slices.Equal(got, want) {
		t.Errorf("in-flight resolution times = %v, want %v: intent 2 was answered before the loss", got, want)
	}
}
