package validate

import (
	"fmt"

	"github.com/idemcoord/idemcoord/chaos/history"
)

// checkLiveness is the after-healing check: every shard has an owner, no
// record is still running past its lease, and every intent ended with a
// final answer.
func (ix *index) checkLiveness(checked map[Invariant]int) []Violation {
	var out []Violation
	if !ix.opts.AllowUnownedShards {
		unowned := 0
		first := -1
		for _, f := range ix.st.Fences {
			checked[Liveness]++
			if f.OwnerRegion == "" {
				if unowned++; first < 0 {
					first = f.Shard
				}
			}
		}
		if unowned > 0 {
			out = append(out, Violation{Invariant: Liveness, Shard: first,
				Message: fmt.Sprintf("%d shards have no owner after healing", unowned)})
		}
	}
	for _, r := range ix.st.Records {
		checked[Liveness]++
		if (r.State == "IN_PROGRESS" || r.State == "PENDING") && !r.LeaseExpiresAt.IsZero() && r.LeaseExpiresAt.Before(ix.st.DBNow) {
			out = append(out, Violation{Invariant: Liveness, Shard: r.Shard,
				Message: fmt.Sprintf("operation %s is %s %v past its lease", r.OperationID, r.State, ix.st.DBNow.Sub(r.LeaseExpiresAt))})
		}
	}
	type intentKey struct {
		client int
		intent int64
	}
	last := map[intentKey]history.Operation{}
	var order []intentKey
	for _, op := range ix.h.Ops {
		if op.Kind != history.KindRequest || op.Intent == 0 {
			continue
		}
		k := intentKey{op.ClientID, op.Intent}
		prev, ok := last[k]
		if !ok {
			order = append(order, k)
		}
		if !ok || op.Call >= prev.Call {
			last[k] = op
		}
	}
	for _, k := range order {
		checked[Liveness]++
		if op := last[k]; !op.Ends() {
			out = append(out, Violation{Invariant: Liveness, KeyHash: history.KeyHash(op.Key), Shard: op.Shard,
				Message: fmt.Sprintf("intent %d ended without a final answer (last: status %d %s)", op.Intent, op.Status, op.Error),
				Excerpt: []history.Operation{op}})
		}
	}
	return out
}
