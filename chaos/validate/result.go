package validate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/idemcoord/idemcoord/chaos/history"
)

// Invariant names an invariant of docs/architecture.md ("Invariants"), or
// one of the checker's own (the register fit, liveness).
type Invariant string

// The invariants Check evaluates, in report order.
const (
	I1       Invariant = "I1"
	I2       Invariant = "I2"
	I3       Invariant = "I3"
	I4       Invariant = "I4"
	I5       Invariant = "I5"
	I6       Invariant = "I6"
	I7       Invariant = "I7"
	I8       Invariant = "I8"
	Register Invariant = "register"
	Liveness Invariant = "liveness"
)

// Invariants lists every invariant Check evaluates, in report order.
var Invariants = []Invariant{I1, I2, I3, I4, I5, I6, I7, I8, Register, Liveness}

// Describe returns the invariant's one-line statement.
func (i Invariant) Describe() string {
	switch i {
	case I1:
		return "at most one claim and one business resource per key, globally"
	case I2:
		return "every acknowledged success has exactly one effect; an ambiguous outcome resolves to zero or one"
	case I3:
		return "no write commits with an epoch lower than its shard's epoch at that time"
	case I4:
		return "epochs only grow, one owner per epoch; etcd and SQL agree once healed"
	case I5:
		return "a replay returns the stored response; same key + different body is 422 and changes nothing"
	case I6:
		return "two regions never accept high-risk writes for one shard at the same time"
	case I7:
		return "no acknowledged write is missing from the store"
	case I8:
		return "no ownership decision is taken from a watch event alone: every transition is a compare-and-swap on the state it replaced"
	case Register:
		return "every key's history fits a write-once register (unknown outcomes may have happened)"
	case Liveness:
		return "after healing: every shard has an owner, nothing in progress past its lease, every intent ended"
	}
	return string(i)
}

// Violation is one broken invariant, with the shortest excerpt of the
// history that shows it.
type Violation struct {
	// Invariant is what broke.
	Invariant Invariant
	// KeyHash is history.KeyHash of the key concerned, empty when the
	// violation is not about one key (a shard, a probe).
	KeyHash string
	// Shard is the shard concerned, -1 if none.
	Shard int
	// Message says what was seen, for people.
	Message string
	// Excerpt holds the operations that show the violation, sorted by
	// call time: for a key, that key's operations (shrunk when possible).
	Excerpt []history.Operation
}

// String formats v on one line, without the excerpt.
func (v Violation) String() string {
	var sb strings.Builder
	sb.WriteString(string(v.Invariant))
	if v.KeyHash != "" {
		sb.WriteString(" key=" + v.KeyHash)
	}
	if v.Shard >= 0 {
		fmt.Fprintf(&sb, " shard=%d", v.Shard)
	}
	sb.WriteString(": " + v.Message)
	return sb.String()
}

// Coverage counts the situations a drill must have exercised for its
// result to mean anything; each is derived from the history and the final
// SQL state, never from the coordinator's metrics.
type Coverage struct {
	// StaleEpochRejected counts probe writes with an old epoch that the
	// store's fence refused.
	StaleEpochRejected int
	// Takeovers counts records whose attempts exceed one.
	Takeovers int
	// Retries40001 counts probe transactions that failed with 40001 and
	// then committed on a whole-transaction retry.
	Retries40001 int
	// AmbiguousResolved counts keys with an unknown outcome that later got
	// an acknowledged answer.
	AmbiguousResolved int
	// MovesUnderLoad counts fence moves audited while traffic ran.
	MovesUnderLoad int
}

// Missing names the counters that are zero.
func (c Coverage) Missing() []string {
	var out []string
	for _, f := range []struct {
		name string
		n    int
	}{{"stale_epoch_rejected", c.StaleEpochRejected}, {"takeover", c.Takeovers}, {"retry_40001", c.Retries40001},
		{"ambiguous_resolved", c.AmbiguousResolved}, {"move_under_load", c.MovesUnderLoad}} {
		if f.n == 0 {
			out = append(out, f.name)
		}
	}
	return out
}

// Result is the checker's verdict on one run.
type Result struct {
	// Violations are every broken invariant found, grouped by invariant.
	Violations []Violation
	// Checked counts how many items (keys, shards, records) each
	// invariant was evaluated on.
	Checked map[Invariant]int
	// Coverage counts what the run exercised.
	Coverage Coverage
	// Failovers are the region failovers the failover controllers
	// audited, oldest first: what the drill's report checks against its
	// faults (a failover of a region no fault took out is a false one).
	Failovers []Failover
	// AckReplayed counts the keys whose acknowledged answer the drill
	// re-sent after healing; AckedLost those whose replay did not get the
	// acknowledged answer back (each also an I7 violation).
	AckReplayed, AckedLost int
}

// Of returns the violations of invariant i.
func (r Result) Of(i Invariant) []Violation {
	var out []Violation
	for _, v := range r.Violations {
		if v.Invariant == i {
			out = append(out, v)
		}
	}
	return out
}

// Safe reports whether every invariant held.
func (r Result) Safe() bool { return len(r.Violations) == 0 }

// Green reports whether the run counts: every invariant held and every
// coverage counter is above zero.
func (r Result) Green() bool { return r.Safe() && len(r.Coverage.Missing()) == 0 }

// sortViolations orders violations by invariant, then key, then shard.
func sortViolations(vs []Violation) {
	order := func(i Invariant) int { return slices.Index(Invariants, i) }
	slices.SortStableFunc(vs, func(a, b Violation) int {
		if d := order(a.Invariant) - order(b.Invariant); d != 0 {
			return d
		}
		if c := strings.Compare(a.KeyHash, b.KeyHash); c != 0 {
			return c
		}
		return a.Shard - b.Shard
	})
}
