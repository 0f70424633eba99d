package report

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/idemcoord/idemcoord/chaos/failpoint"
	"github.com/idemcoord/idemcoord/chaos/history"
	"github.com/idemcoord/idemcoord/chaos/validate"
)

// Input is what a report is built from.
type Input struct {
	// Scenario and Seed identify the run; the seed replays its faults.
	Scenario string
	Seed     uint64
	// History is the run's record.
	History history.History
	// Result is the checker's verdict on it.
	Result validate.Result
	// Client is how the traffic reached the cluster (the drill's client
	// mode: direct, sdk or entry); empty reads as direct.
	Client string
	// Home, when set, is each shard's home region, which names the store
	// cluster holding it on the replicated store (OtherClusters).
	Home func(shard int) string
}

// Second is one bucket of the timeline.
type Second struct {
	// At is the bucket's start, in seconds since the run began.
	At int
	// Requests, Acked and Errors count the attempts that returned in it;
	// Errors are attempts without a success.
	Requests, Acked, Errors int
}

// Window is one fault's window.
type Window struct {
	// From and To are seconds since the run began.
	From, To float64
	// What describes the fault.
	What string
	// Region is the fault's target region, if any.
	Region string
	// Requests and Acked count the attempts that returned inside it.
	Requests, Acked int
	// Rejected counts 503 answers inside it (the reject policy's answer);
	// RejectedNoRetryAfter those of them without a Retry-After.
	Rejected, RejectedNoRetryAfter int
	// Failover is each moved actor's time from the fault's effect (the
	// region's death: history.Operation.Effect, after the kill's hold of
	// the upstream) to its first success served by another region than
	// the faulted one, for
	// faults that take a region out (RegionLoss); see window for which
	// actors and successes count.
	Failover []time.Duration
	// Unaffected and Affected are the availability inside the window of
	// the actors the faulted region did not own when the fault began and
	// of those it owned, for faults that take a region out (see classes).
	Unaffected, Affected Availability
	// InFlight is, for each intent of an affected actor that had a call
	// in flight when the fault began, the time from the fault's effect
	// (as for Failover) to its first final answer; an intent answered
	// before the effect was not in flight in the lost region and is left out.
	InFlight []time.Duration
}

// Length is the window's length in seconds.
func (w Window) Length() float64 { return w.To - w.From }

// RegionLoss lists the fault kinds that take a region out of service, the
// ones failover times are measured for: the rows of failpoint's registry
// of class failpoint.ClassRegionLoss.
var RegionLoss = regionLoss()

func regionLoss() map[string]bool {
	out := map[string]bool{}
	for _, d := range failpoint.Defs() {
		if d.Class == failpoint.ClassRegionLoss {
			out[string(d.Kind)] = true
		}
	}
	return out
}

// Percentiles of a set of durations.
type Percentiles struct {
	N                  int
	P50, P90, P99, Max time.Duration
}

// Row is one line of the invariant table.
type Row struct {
	Invariant   validate.Invariant
	Description string
	Checked     int
	// Unit is what Checked counts (keys, shards, records).
	Unit       string
	Violations []validate.Violation
}

// Pass reports whether the invariant held.
func (r Row) Pass() bool { return len(r.Violations) == 0 }

// Report is everything the text and HTML forms show.
type Report struct {
	Scenario string
	Seed     uint64
	// Client is the drill's client mode (Input.Client), "direct" when
	// the input named none.
	Client string
	// Requests counts attempts; Acked their successes; Replayed the
	// successes that were replays; Mismatches the 422s; Duplicates the
	// I1 and I2 violations (a second claim, resource or charge).
	Requests, Acked, Replayed, Mismatches, Duplicates int
	// Errors counts attempts without a success by class.
	Errors map[string]int
	// Timeline has one bucket per second of the run.
	Timeline []Second
	// Faults are the fault windows.
	Faults []Window
	// Latency is over acknowledged attempts; Failover over every window's
	// failover times; InFlight over every window's in-flight resolution
	// times.
	Latency, Failover, InFlight Percentiles
	// Unaffected and Affected sum the windows' availability per class.
	Unaffected, Affected Availability
	// RegionFailovers counts the region failovers the controllers
	// audited; FalseFailovers lists those of a region no fault of the
	// run took out (falseFailovers).
	RegionFailovers int
	FalseFailovers  []FalseFailover
	// AckReplayed and AckedLost are the checker's: the keys whose
	// acknowledged answer was re-sent after the drill, and those whose
	// replay did not get it back.
	AckReplayed, AckedLost int
	// StoreFailover is over the replicated store's failovers: from the
	// primary's death to the first write committed on its successor
	// (history.ProbeStoreFailover); StoreFailoversUnmeasured counts those
	// with no write seen on a successor.
	StoreFailover            Percentiles
	StoreFailoversUnmeasured int
	// OtherClusters is the availability, during the store failovers, of
	// the actors whose shards live on the other clusters (otherClusters):
	// OtherClustersMet wants it at OtherClustersFloor at least, and a run
	// below it is not green.
	OtherClusters Availability
	// Zombies counts the store primaries paused past their ttl
	// (pause_store_primary); ZombiesRejoined those that came back as a
	// standby streaming from their successor. A zombie that acknowledged a
	// write after its successor was promoted would lose it to its rewind:
	// AckedLost counts it.
	Zombies, ZombiesRejoined int
	// Table is the invariant table, in validate.Invariants order.
	Table []Row
	// Coverage and Missing are the coverage counters and the zero ones.
	Coverage validate.Coverage
	Missing  []string
	// Safe and Green are the verdict.
	Safe, Green bool
	// Meta identifies the run: when, by which command and build.
	Meta Meta
	// Ledgers are the incident ledgers of the region-loss windows, by
	// fault (set by the drill after Build, which has no store).
	Ledgers []WindowLedger
}

// Build computes the report of in.
func Build(in Input) Report {
	h := in.History
	h.Sort()
	client := in.Client
	if client == "" {
		client = "direct"
	}
	r := Report{Scenario: in.Scenario, Seed: in.Seed, Client: client, Errors: map[string]int{}, Coverage: in.Result.Coverage,
		Missing: in.Result.Coverage.Missing(), Safe: in.Result.Safe(), Green: in.Result.Green()}
	var lat []time.Duration
	var first, last int64 = -1, 0
	for _, op := range h.Ops {
		if first < 0 || op.Call < first {
			first = op.Call
		}
		last = max(last, op.Return)
	}
	r.Meta = meta(time.Duration(last - max(first, 0)))
	for _, op := range h.Ops {
		if op.Kind != history.KindRequest {
			continue
		}
		r.Requests++
		// The timeline plots the drill's own traffic: the last phase's
		// re-send of every acknowledged answer (AckReplay) comes at once,
		// many times the workload's rate, and would set the chart's scale.
		b := &Second{}
		if !op.AckReplay {
			sec := int(op.Return / int64(time.Second))
			for len(r.Timeline) <= sec {
				r.Timeline = append(r.Timeline, Second{At: len(r.Timeline)})
			}
			b = &r.Timeline[sec]
		}
		b.Requests++
		switch {
		case op.Acknowledged():
			r.Acked++
			b.Acked++
			lat = append(lat, op.Duration())
			if op.Replayed {
				r.Replayed++
			}
		default:
			b.Errors++
			r.Errors[errorClass(op)]++
			if op.Mismatch() {
				r.Mismatches++
			}
		}
	}
	r.Latency = percentiles(lat)
	var failover, inFlight []time.Duration
	cs := calls(h)
	for _, f := range h.Filter(history.KindFault) {
		w := window(h, f)
		if w.Region != "" && !f.Skipped && RegionLoss[f.Fault] {
			classes(cs, f, &w)
		}
		failover = append(failover, w.Failover...)
		inFlight = append(inFlight, w.InFlight...)
		r.Unaffected.add(w.Unaffected)
		r.Affected.add(w.Affected)
		r.Faults = append(r.Faults, w)
	}
	r.Failover, r.InFlight = percentiles(failover), percentiles(inFlight)
	r.AckReplayed, r.AckedLost = in.Result.AckReplayed, in.Result.AckedLost
	var store []time.Duration
	for _, op := range h.Filter(history.KindProbe) {
		if op.Probe != history.ProbeStoreFailover {
			continue
		}
		if op.Return > op.Call {
			store = append(store, time.Duration(op.Return-op.Call))
		} else {
			r.StoreFailoversUnmeasured++
		}
		if op.Fault == string(failpoint.PauseStorePrimary) {
			r.Zombies++
			if zombieRejoined(op.Detail) {
				r.ZombiesRejoined++
			}
		}
	}
	r.StoreFailover = percentiles(store)
	r.OtherClusters = otherClusters(h, cs, in.Home)
	if !r.OtherClustersMet() {
		r.Green = false
	}
	r.RegionFailovers = len(in.Result.Failovers)
	r.FalseFailovers = falseFailovers(h, in.Result.Failovers)
	for _, inv := range validate.Invariants {
		row := Row{Invariant: inv, Description: inv.Describe(), Checked: in.Result.Checked[inv], Unit: units[inv],
			Violations: in.Result.Of(inv)}
		r.Table = append(r.Table, row)
		if inv == validate.I1 || inv == validate.I2 {
			r.Duplicates += len(row.Violations)
		}
	}
	return r
}

// zombieRejoined reads a ProbeStoreFailover's detail: the old primary
// rejoined (streams from its successor again).
func zombieRejoined(detail string) bool {
	var oldTL, newTL int
	var rejoined bool
	if _, err := fmt.Sscanf(detail, "old timeline %d, new timeline %d, rejoined %t", &oldTL, &newTL, &rejoined); err != nil {
		return false
	}
	return rejoined
}

func errorClass(op history.Operation) string {
	if op.Error != history.ErrNone {
		return string(op.Error)
	}
	return strconv.Itoa(op.Status)
}

// window measures one fault: traffic inside it, and failover times of the
// actors the faulted region served when it started.
//
// An actor is moved by the fault when its last success before the fault
// was served by the faulted region (an actor served there earlier, whose
// shard has moved since, is not). Its failover time runs from the fault's
// effect (the region's death: a kill or pause first holds the region's
// upstream for a second, and the region serves until it dies) to its
// first success served by another region, sent before the
// window closed (the fault healed, its region restarted and failed back).
// An actor with no such success waited for its region to come back: it
// was not failed over, and a success elsewhere in a later fault of the
// same region is that fault's failover, not this one's.
func window(h history.History, f history.Operation) Window {
	w := Window{From: seconds(f.Call), To: seconds(f.Return), What: f.Detail, Region: f.SentTo}
	lastBefore := map[string]string{} // actor -> region of its last success before the fault
	firstAfter := map[string]int64{}
	for _, op := range h.Ops {
		if op.Kind != history.KindRequest {
			continue
		}
		if op.Return >= f.Call && op.Return <= f.Return {
			w.Requests++
			if op.Acknowledged() {
				w.Acked++
			}
			if op.Status == 503 {
				w.Rejected++
				if op.RetryAfter == 0 {
					w.RejectedNoRetryAfter++
				}
			}
		}
		if w.Region == "" || f.Skipped || !RegionLoss[f.Fault] || !op.Acknowledged() {
			continue
		}
		switch {
		case op.Return < f.Call:
			lastBefore[op.Actor] = op.ServedBy
		case op.Call >= f.Call && op.Call <= f.Return && op.ServedBy != "" && op.ServedBy != w.Region &&
			lastBefore[op.Actor] == w.Region:
			if _, seen := firstAfter[op.Actor]; !seen {
				firstAfter[op.Actor] = op.Return
			}
		}
	}
	actors := make([]string, 0, len(firstAfter))
	for a := range firstAfter {
		actors = append(actors, a)
	}
	sort.Strings(actors)
	for _, a := range actors {
		w.Failover = append(w.Failover, time.Duration(firstAfter[a]-f.Effect()))
	}
	return w
}

func percentiles(ds []time.Duration) Percentiles {
	if len(ds) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return Percentiles{N: len(s), P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: s[len(s)-1]}
}

func seconds(ns int64) float64 { return float64(ns) / float64(time.Second) }
