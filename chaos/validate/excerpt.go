package validate

import (
	"cmp"
	"slices"

	"github.com/idemcoord/idemcoord/chaos/history"
)

// effectsExcerpt is the shortest excerpt of a key's operations that shows
// which of them produced the operation ids: the first operation naming
// each id and, when an id is named by none (its answer was lost), every
// operation whose outcome is unknown, since one of them ran it. Sorted by
// call time; ops when nothing matches.
func effectsExcerpt(ops []history.Operation, ids []string, also ...history.Operation) []history.Operation {
	out := slices.Clone(also)
	unnamed := false
	for _, id := range ids {
		i := slices.IndexFunc(ops, func(op history.Operation) bool { return op.OperationID == id })
		if i < 0 {
			unnamed = true
			continue
		}
		out = append(out, ops[i])
	}
	if unnamed {
		for _, op := range ops {
			if op.Unknown() {
				out = append(out, op)
			}
		}
	}
	if len(out) == 0 {
		return ops
	}
	return sortedUnique(out)
}

// sortedUnique sorts ops by call time and drops repeats of one sequence
// number.
func sortedUnique(ops []history.Operation) []history.Operation {
	slices.SortStableFunc(ops, func(a, b history.Operation) int {
		if a.Call != b.Call {
			return cmp.Compare(a.Call, b.Call)
		}
		return cmp.Compare(a.Seq, b.Seq)
	})
	return slices.CompactFunc(ops, func(a, b history.Operation) bool { return a.Seq == b.Seq })
}

// bodiesExcerpt is the key's first operation and every operation sent
// with another body: what shows a changed body taking effect.
func bodiesExcerpt(ops []history.Operation, first string) []history.Operation {
	out := []history.Operation{ops[0]}
	for _, op := range ops[1:] {
		if op.BodyHash != first {
			out = append(out, op)
		}
	}
	return out
}

// paymentIDs returns the operation ids of pays; charged only those the
// ledger charged.
func (ix *index) paymentIDs(pays []Payment, charged bool) []string {
	var ids []string
	for _, p := range pays {
		if !charged || len(ix.charges[p.OperationID]) > 0 {
			ids = append(ids, p.OperationID)
		}
	}
	return ids
}
