package report

import (
	"time"

	"github.com/idemcoord/idemcoord/chaos/history"
)

// Availability counts the client calls of one class of actors that
// returned inside fault windows, and how many of them got a final answer
// (see classes).
type Availability struct {
	Calls, OK int
}

// Share returns OK/Calls, and false when there was no call to measure.
func (a Availability) Share() (float64, bool) {
	if a.Calls == 0 {
		return 0, false
	}
	return float64(a.OK) / float64(a.Calls), true
}

func (a *Availability) add(b Availability) { a.Calls += b.Calls; a.OK += b.OK }

// call is one client-level call: what a user's code sees. In the direct
// and entry modes it is one attempt; in the SDK mode one Do, with every
// attempt the SDK made inside it; for the drill's probe, one intent's
// attempts until it was answered.
type call struct {
	actor      string
	shard      int
	client     int
	intent     int64
	start, end int64
	ok, ends   bool
	ambiguous  bool   // an attempt's outcome was unknown (history.Operation.Ambiguous)
	cut        bool   // its last attempt was ended by the drill (history.Operation.Cut)
	servedBy   string // the last attempt's
}

// calls groups the history's requests (sorted by Seq) into client calls,
// in the order their first attempt was recorded.
func calls(h history.History) []call {
	var out []call
	idx := map[[2]int64]int{} // (client, ClientCall) -> index in out
	for _, op := range h.Ops {
		if op.Kind != history.KindRequest {
			continue
		}
		if op.ClientCall != 0 {
			if i, ok := idx[[2]int64{int64(op.ClientID), op.ClientCall}]; ok {
				c := &out[i]
				c.start, c.end = min(c.start, op.Call), max(c.end, op.Return)
				c.ok = c.ok || op.Acknowledged()
				c.ends = c.ends || op.Ends()
				c.ambiguous = c.ambiguous || op.Ambiguous()
				c.servedBy = op.ServedBy
				c.cut = op.Cut
				continue
			}
			idx[[2]int64{int64(op.ClientID), op.ClientCall}] = len(out)
		}
		out = append(out, call{actor: op.Actor, shard: op.Shard, client: op.ClientID, intent: op.Intent,
			start: op.Call, end: op.Return, ok: op.Acknowledged(), ends: op.Ends(), ambiguous: op.Ambiguous(),
			servedBy: op.ServedBy, cut: op.Cut})
	}
	return out
}

// classes measures, for a fault that took region out, the availability
// of the calls returning inside the window by class (actors the region
// owned when the fault began, and the others) and the time to a final
// answer of the affected actors' intents that had a call in flight when
// it began.
//
// An actor's owner at the fault's start is the region that served its
// last success before it; an actor with none takes its shard's (the last
// success of any actor of the shard); an actor with neither is in no
// class. A call is available when it got a final answer: a success, or a
// 4xx retrying cannot change (a changed body's 422 is the right answer).
// A reject-policy 503 is not, so on a reject endpoint an affected actor
// counts as available only once its failover was accepted. A call the
// drill itself ended without an answer (history.Operation.Cut: its main
// phase was over while the window, which lasts until the heal completed,
// was still open) is in no class: no answer was due.
//
// An affected actor's intent was in flight in the region when a call of
// it spanned the fault's start, or when a call started inside the window
// got an unknown outcome (a lost answer, a timeout, a 5xx other than
// 503: the region died with it, the kill's hold included) before the
// actor's first success served by another region (from then on its shard
// is served elsewhere, and an unknown outcome, such as a call the drill
// cut at the end of its main phase, is not the lost region's in-flight
// work); its time runs from the fault's effect (the region's death, as
// for failover times) to its first final answer.
func classes(cs []call, f history.Operation, w *Window) {
	actorOwner, shardOwner := map[string]string{}, map[int]string{}
	for _, c := range cs {
		if c.ok && c.end < f.Call && c.servedBy != "" {
			actorOwner[c.actor], shardOwner[c.shard] = c.servedBy, c.servedBy
		}
	}
	affected := func(c call) (bool, bool) {
		o, ok := actorOwner[c.actor]
		if !ok {
			o, ok = shardOwner[c.shard]
		}
		return o == w.Region, ok
	}
	type intentID struct {
		client int
		intent int64
	}
	movedAt := map[string]int64{} // actor -> end of its first success elsewhere inside the window
	for _, c := range cs {
		if c.ok && c.start >= f.Call && c.start <= f.Return && c.servedBy != "" && c.servedBy != w.Region {
			if at, seen := movedAt[c.actor]; !seen || c.end < at {
				movedAt[c.actor] = c.end
			}
		}
	}
	inFlight := map[intentID]bool{}
	resolved := map[intentID]int64{}
	ended := map[intentID]bool{} // ended before the fault
	for _, c := range cs {
		id := intentID{c.client, c.intent}
		aff, known := affected(c)
		if c.end < f.Call && c.ends {
			ended[id] = true
		}
		if c.cut && !c.ends {
			continue // the drill ended the call (its main phase was over): no answer was due
		}
		if known && c.end >= f.Call && c.end <= f.Return {
			a := Availability{Calls: 1}
			if c.ends {
				a.OK = 1
			}
			if aff {
				w.Affected.add(a)
			} else {
				w.Unaffected.add(a)
			}
		}
		spans := c.start < f.Call && c.end >= f.Call
		moved, wasMoved := movedAt[c.actor]
		lost := c.start >= f.Call && c.start <= f.Return && c.ambiguous && (!wasMoved || c.start < moved)
		if aff && known && !ended[id] && (spans || lost) {
			inFlight[id] = true
		}
		if inFlight[id] && c.end >= f.Call && c.ends {
			if _, done := resolved[id]; !done {
				resolved[id] = c.end
			}
		}
	}
	for id := range inFlight {
		// An intent answered before the fault took effect (the kill's
		// hold, a pause's lead-in) was never stuck in the lost region.
		if at, ok := resolved[id]; ok && at >= f.Effect() {
			w.InFlight = append(w.InFlight, time.Duration(at-f.Effect()))
		}
	}
}
