package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/idemcoord/idemcoord/chaos/validate"
)

// maxExcerpt bounds the operations a text report prints per violation.
const maxExcerpt = 12

// WriteText writes the summary: the verdict, the figures, the coverage,
// the invariant table and every violation with its excerpt (keys hashed).
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	verdict := "GREEN"
	switch {
	case !r.Safe:
		verdict = "VIOLATIONS"
	case !r.Green && len(r.Missing) > 0:
		verdict = "SAFE BUT NOT COVERED (missing: " + strings.Join(r.Missing, ", ") + ")"
	case !r.Green:
		verdict = fmt.Sprintf("SAFE BUT THE OTHER STORE CLUSTERS' ACTORS WERE BELOW %.3f", OtherClustersFloor)
	}
	fmt.Fprintf(&b, "drill %s seed %d: %s\n", r.Scenario, r.Seed, verdict)
	fmt.Fprintf(&b, "requests %d, acknowledged %d (replayed %d), 422 %d, duplicates %d\n",
		r.Requests, r.Acked, r.Replayed, r.Mismatches, r.Duplicates)
	if len(r.Errors) > 0 {
		keys := make([]string, 0, len(r.Errors))
		for k := range r.Errors {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s=%d", k, r.Errors[k])
		}
		fmt.Fprintf(&b, "errors by class: %s\n", strings.Join(parts, " "))
	}
	fmt.Fprintf(&b, "latency (acknowledged, n=%d): %s\n", r.Latency.N, r.Latency)
	fmt.Fprintf(&b, "failover (region out -> first success of a moved actor in its new owner, n=%d): %s\n",
		r.Failover.N, r.Failover)
	fmt.Fprintf(&b, "availability in region-loss windows (client calls with a final answer): unaffected actors %s, affected actors %s\n",
		r.Unaffected, r.Affected)
	fmt.Fprintf(&b, "in-flight intents of the lost region (region out -> final answer, n=%d): %s\n", r.InFlight.N, r.InFlight)
	if r.AckReplayed > 0 {
		fmt.Fprintf(&b, "acknowledged answers re-sent after the drill: %d, lost (acked_lost): %d\n", r.AckReplayed, r.AckedLost)
	}
	if r.StoreFailover.N > 0 || r.StoreFailoversUnmeasured > 0 {
		fmt.Fprintf(&b, "store failover (primary's death -> first write committed on its successor, n=%d, %d unmeasured): %s\n",
			r.StoreFailover.N, r.StoreFailoversUnmeasured, r.StoreFailover)
	}
	if r.OtherClusters.Calls > 0 {
		met := "met"
		if !r.OtherClustersMet() {
			met = "BELOW THE FLOOR"
		}
		fmt.Fprintf(&b, "availability of actors on the other store clusters during store failovers: %s (floor %.3f: %s)\n",
			r.OtherClusters, OtherClustersFloor, met)
	}
	if r.Zombies > 0 {
		fmt.Fprintf(&b, "zombie store primaries: %d, rejoined as a standby of their successor: %d\n", r.Zombies, r.ZombiesRejoined)
	}
	fmt.Fprintf(&b, "region failovers: %d, false (a region no fault took out): %d", r.RegionFailovers, len(r.FalseFailovers))
	for _, f := range r.FalseFailovers {
		fmt.Fprintf(&b, "; %s at %.1fs (%d shards)", f.Region, f.At, f.Shards)
	}
	b.WriteString("\n")
	for i, f := range r.Faults {
		fmt.Fprintf(&b, "  fault %6.1fs-%6.1fs %s: %d requests, %d acknowledged, %d 503 (%d without Retry-After), %d moved actors",
			f.From, f.To, f.What, f.Requests, f.Acked, f.Rejected, f.RejectedNoRetryAfter, len(f.Failover))
		if f.Unaffected.Calls+f.Affected.Calls > 0 {
			fmt.Fprintf(&b, ", unaffected %s, affected %s, %d in flight", f.Unaffected, f.Affected, len(f.InFlight))
		}
		b.WriteString("\n")
		if l := r.LedgerOf(i); l != nil && l.Err == "" {
			fmt.Fprintf(&b, "    ledger %s: %d intents, %d must act: %s\n", l.Title(), l.Total, l.MustAct, l.Counts())
		}
	}
	c := r.Coverage
	fmt.Fprintf(&b, "coverage: stale_epoch_rejected=%d takeover=%d retry_40001=%d ambiguous_resolved=%d move_under_load=%d\n",
		c.StaleEpochRejected, c.Takeovers, c.Retries40001, c.AmbiguousResolved, c.MovesUnderLoad)
	for _, row := range r.Table {
		state := "pass"
		if !row.Pass() {
			state = fmt.Sprintf("FAIL (%d)", len(row.Violations))
		}
		fmt.Fprintf(&b, "  %-8s %-10s checked %-6d %s\n", row.Invariant, state, row.Checked, row.Description)
	}
	for _, row := range r.Table {
		for _, v := range row.Violations {
			writeViolation(&b, r.Seed, v)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeViolation(b *strings.Builder, seed uint64, v validate.Violation) {
	fmt.Fprintf(b, "VIOLATION seed=%d %s\n", seed, v)
	for i, op := range v.Excerpt {
		if i == maxExcerpt {
			fmt.Fprintf(b, "    ... %d more\n", len(v.Excerpt)-maxExcerpt)
			break
		}
		fmt.Fprintf(b, "    %s\n", describeOp(op))
	}
}

// String formats the percentiles on one line.
func (p Percentiles) String() string {
	if p.N == 0 {
		return "none"
	}
	return fmt.Sprintf("p50 %s p90 %s p99 %s max %s", round(p.P50), round(p.P90), round(p.P99), round(p.Max))
}

// String formats the availability as "0.9990 (999/1000)", or "n/a"
// without calls.
func (a Availability) String() string {
	v, ok := a.Share()
	if !ok {
		return "n/a"
	}
	return fmt.Sprintf("%.4f (%d/%d)", v, a.OK, a.Calls)
}
