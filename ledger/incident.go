package ledger

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/idemcoord/idemcoord/store"
)

// Incident kinds (Incident.Kind).
const (
	KindFailover = "failover" // a region's shards moved away, FAILED_OVER (the controller or idemctl failover)
	KindFailback = "failback" // a region's shards moved home
	KindDrain    = "drain"    // a region's shards moved away, ACTIVE (planned)
	KindAccept   = "accept"   // an operator accepted the new owner of FAILED_OVER shards
	KindMove     = "move"     // shards moved by hand (idemctl move), outside a region-level repair
	// KindStoreOutage: a region's gateways found the store unavailable
	// and refused requests (503 store-unavailable) from From to To.
	KindStoreOutage = "store_outage"
)

// AuditActions are the repair audit actions incidents are made of.
var AuditActions = []string{"move_fence", "region_failover", "failover", "failback", "drain", "failover_accept",
	ActionStoreOutage}

// moveSpan is how long before its region-level audit row a repair's fence
// moves may lie: the row is written after the moves, which take seconds
// (a drain waits up to its drain timeout first).
const moveSpan = 15 * time.Minute

// Move is one audited fence move of a shard.
type Move struct {
	At        time.Time `json:"at"`
	Shard     int       `json:"shard"`
	FromEpoch int64     `json:"from_epoch"`
	ToEpoch   int64     `json:"to_epoch"`
	To        string    `json:"to"`
}

// Incident is one failover, failback, drain, accept or move, with its
// window. ID is the first 8 hex digits of its audit row's id.
type Incident struct {
	ID       string    `json:"id"`
	Kind     string    `json:"kind"`
	Region   string    `json:"region"`
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	Open     bool      `json:"open,omitempty"`
	Operator string    `json:"operator"`
	Reason   string    `json:"reason"`
	Detail   string    `json:"detail"`
	Shards   []int     `json:"shards"`
	// EndedBy is the incident that closed a failover's window (its
	// failback or accept), "" when open or not a failover.
	EndedBy string `json:"ended_by,omitempty"`
	// Moves are its fence moves (not in the JSON: Shards names them).
	Moves []Move `json:"-"`
}

var (
	moveRe   = regexp.MustCompile(`^shard=(\d+) epoch (\d+)->(\d+) to="([^"]*)"`)
	acceptRe = regexp.MustCompile(`^shard=(\d+) epoch=(\d+) owner="([^"]*)"`)
	regionRe = regexp.MustCompile(`(?:^|\s)region=(\S+)`)
)

// ParseMove reads a move_fence audit row's detail (fencing.Move.String).
func ParseMove(r store.AuditRow) (Move, bool) {
	m := moveRe.FindStringSubmatch(r.Detail)
	if m == nil {
		return Move{}, false
	}
	sh, _ := strconv.Atoi(m[1])
	from, _ := strconv.ParseInt(m[2], 10, 64)
	to, _ := strconv.ParseInt(m[3], 10, 64)
	return Move{At: r.At, Shard: sh, FromEpoch: from, ToEpoch: to, To: m[4]}, true
}

// Incidents derives the incidents of audit rows (any order; rows of other
// actions are ignored), oldest first. now closes the window of a failover
// nothing has ended yet (Open).
func Incidents(rows []store.AuditRow, now time.Time) []Incident {
	rows = slices.Clone(rows)
	slices.SortStableFunc(rows, func(a, b store.AuditRow) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return cmp.Compare(a.ID.String(), b.ID.String())
	})
	used := make([]bool, len(rows))
	var out []Incident
	for i, r := range rows {
		kind := ""
		switch r.Action {
		case "region_failover", "failover":
			kind = KindFailover
		case "failback":
			kind = KindFailback
		case "drain":
			kind = KindDrain
		default:
			continue
		}
		used[i] = true
		in := Incident{ID: shortID(r), Kind: kind, From: r.At, To: r.At, Operator: r.Operator, Reason: r.Reason, Detail: r.Detail}
		if m := regionRe.FindStringSubmatch(r.Detail); m != nil {
			in.Region = m[1]
		}
		// Its moves: the same operator and reason, shortly before.
		for j := i - 1; j >= 0 && r.At.Sub(rows[j].At) <= moveSpan; j-- {
			mr := rows[j]
			if used[j] || mr.Action != "move_fence" || mr.Operator != r.Operator || mr.Reason != r.Reason {
				continue
			}
			if mv, ok := ParseMove(mr); ok {
				used[j] = true
				in.Moves = append(in.Moves, mv)
				in.From = mr.At
			}
		}
		slices.Reverse(in.Moves)
		out = append(out, in)
	}
	out = append(out, accepts(rows, used)...)
	out = append(out, manualMoves(rows, used)...)
	out = append(out, storeOutages(rows)...)
	slices.SortStableFunc(out, func(a, b Incident) int { return a.From.Compare(b.From) })
	for i := range out {
		for _, mv := range out[i].Moves {
			out[i].Shards = append(out[i].Shards, mv.Shard)
		}
		slices.Sort(out[i].Shards)
		out[i].Shards = slices.Compact(out[i].Shards)
	}
	endFailovers(out, now)
	return out
}

// accepts groups failover_accept rows (one per shard) of one operator and
// reason, each within moveSpan of the previous, into one incident.
func accepts(rows []store.AuditRow, used []bool) []Incident {
	var out []Incident
	var cur *Incident
	for i, r := range rows {
		if r.Action != "failover_accept" {
			continue
		}
		m := acceptRe.FindStringSubmatch(r.Detail)
		if m == nil {
			continue
		}
		used[i] = true
		sh, _ := strconv.Atoi(m[1])
		ep, _ := strconv.ParseInt(m[2], 10, 64)
		if cur == nil || cur.Operator != r.Operator || cur.Reason != r.Reason || r.At.Sub(cur.To) > moveSpan {
			out = append(out, Incident{ID: shortID(r), Kind: KindAccept, Region: m[3], From: r.At, Operator: r.Operator,
				Reason: r.Reason})
			cur = &out[len(out)-1]
		}
		cur.To = r.At
		cur.Moves = append(cur.Moves, Move{At: r.At, Shard: sh, FromEpoch: ep, ToEpoch: ep, To: m[3]})
		cur.Detail = fmt.Sprintf("%d shards accepted FAILED_OVER->ACTIVE", len(cur.Moves))
	}
	return out
}

// manualMoves groups the fence moves no region-level row claimed (idemctl
// move, a controller's move whose summary row is missing) by operator and
// reason, each within moveSpan of the previous.
func manualMoves(rows []store.AuditRow, used []bool) []Incident {
	var out []Incident
	var cur *Incident
	for i, r := range rows {
		if used[i] || r.Action != "move_fence" {
			continue
		}
		mv, ok := ParseMove(r)
		if !ok {
			continue
		}
		if cur == nil || cur.Operator != r.Operator || cur.Reason != r.Reason || r.At.Sub(cur.To) > moveSpan {
			out = append(out, Incident{ID: shortID(r), Kind: KindMove, Region: mv.To, From: r.At, Operator: r.Operator,
				Reason: r.Reason})
			cur = &out[len(out)-1]
		}
		cur.To = r.At
		cur.Moves = append(cur.Moves, mv)
		cur.Detail = fmt.Sprintf("%d shard moves", len(cur.Moves))
	}
	return out
}

// storeOutages makes an incident of each region's store outage: the
// windows its gateway instances audited (one row each), merged where
// they overlap, from the earliest start to the latest end, with the
// requests they refused summed.
func storeOutages(rows []store.AuditRow) []Incident {
	var ws []Outage
	ids := map[int]store.AuditRow{}
	for _, r := range rows {
		if o, ok := ParseOutage(r); ok {
			ids[len(ws)] = r
			ws = append(ws, o)
		}
	}
	order := make([]int, len(ws))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if c := cmp.Compare(ws[a].Region, ws[b].Region); c != 0 {
			return c
		}
		return ws[a].From.Compare(ws[b].From)
	})
	var out []Incident
	var refused, workers int
	for _, i := range order {
		o, r := ws[i], ids[i]
		if n := len(out); n > 0 && out[n-1].Region == o.Region && !o.From.After(out[n-1].To) {
			cur := &out[n-1]
			if o.To.After(cur.To) {
				cur.To = o.To
			}
			refused, workers = refused+o.Refused, workers+1
			cur.Detail = outageDetail(refused, workers)
			continue
		}
		refused, workers = o.Refused, 1
		out = append(out, Incident{ID: shortID(r), Kind: KindStoreOutage, Region: o.Region, From: o.From, To: o.To,
			Operator: r.Operator, Reason: r.Reason, Detail: outageDetail(refused, workers)})
	}
	return out
}

func outageDetail(refused, workers int) string {
	return fmt.Sprintf("%d requests refused 503 store-unavailable (seen by %d gateway instances)", refused, workers)
}

// endFailovers closes each failover's window at the first later failback
// of its region or accept of one of its shards; one nothing ended yet is
// Open and runs to now.
func endFailovers(in []Incident, now time.Time) {
	for i := range in {
		f := &in[i]
		if f.Kind != KindFailover || len(f.Shards) == 0 {
			continue
		}
		f.Open, f.To = true, now
		for j := range in {
			e := in[j]
			if !e.From.After(f.From) || (e.Kind != KindFailback && e.Kind != KindAccept) {
				continue
			}
			if (e.Kind == KindFailback && e.Region == f.Region) || overlaps(e.Shards, f.Shards) {
				if f.Open || e.From.Before(f.To) {
					f.Open, f.To, f.EndedBy = false, e.From, e.ID
				}
			}
		}
	}
}

func overlaps(a, b []int) bool {
	for _, x := range a {
		if _, ok := slices.BinarySearch(b, x); ok {
			return true
		}
	}
	return false
}

func shortID(r store.AuditRow) string { return r.ID.String()[:8] }

// Window is what a report reads: the time window, the shards (nil: all)
// and the fence moves inside it, by shard (the first of each), which say
// which records a region that took a shard over wrote.
type Window struct {
	From, To time.Time
	// EventsFrom is where held and refused requests start to count, when
	// before From (a failover's: failoverPreroll).
	EventsFrom time.Time
	Shards     []int
	Moves      map[int]Move
}

// failoverPreroll is how long before a failover's first fence move its
// region may have been lost already: requests were held (503 while the
// owner was suspect) from then, before anything moved. The controller
// confirms a failure after the liveness TTL and its confirmation delay
// (seconds), then moves; 30 s covers that with room.
const failoverPreroll = 30 * time.Second

// WindowOf returns the window of in, with its moves.
func WindowOf(in Incident) Window {
	w := Window{From: in.From, To: in.To, Shards: in.Shards, Moves: map[int]Move{}}
	if in.Kind == KindFailover {
		w.EventsFrom = in.From.Add(-failoverPreroll)
	}
	if w.Shards == nil && in.Kind != KindStoreOutage { // a store outage touched every shard (nil)
		w.Shards = []int{}
	}
	for _, mv := range in.Moves {
		if _, ok := w.Moves[mv.Shard]; !ok && mv.ToEpoch > mv.FromEpoch {
			w.Moves[mv.Shard] = mv
		}
	}
	return w
}

// WindowBetween is a window of --from/--to: every shard, with the fence
// moves of the incidents inside it.
func WindowBetween(from, to time.Time, all []Incident) Window {
	w := Window{From: from, To: to, Moves: map[int]Move{}}
	for _, in := range all {
		for _, mv := range in.Moves {
			if mv.At.Before(from) || mv.At.After(to) || mv.ToEpoch == mv.FromEpoch {
				continue
			}
			if old, ok := w.Moves[mv.Shard]; !ok || mv.At.Before(old.At) {
				w.Moves[mv.Shard] = mv
			}
		}
	}
	return w
}
