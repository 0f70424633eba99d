package validate

import (
	"fmt"
	"slices"

	"github.com/idemcoord/idemcoord/chaos/history"
)

// keyFacts is what one key's history says, before the ledger is read.
type keyFacts struct {
	key, actor, ref, firstBody string
	firstAck                   *history.Operation
	acks                       []history.Operation
	opIDs                      []string // distinct, in order of appearance
}

func factsOf(key string, ops []history.Operation) keyFacts {
	f := keyFacts{key: key}
	seen := map[string]bool{}
	for i, op := range ops {
		if f.actor == "" {
			f.actor, f.ref, f.firstBody = op.Actor, op.Reference, op.BodyHash
		}
		if op.OperationID != "" && !seen[op.OperationID] {
			seen[op.OperationID] = true
			f.opIDs = append(f.opIDs, op.OperationID)
		}
		if op.Acknowledged() {
			f.acks = append(f.acks, op)
			if f.firstAck == nil {
				f.firstAck = &ops[i]
			}
		}
	}
	return f
}

// checkKey evaluates I1, I2, I5, I7 and the register fit on one key.
func (ix *index) checkKey(key string, ops []history.Operation, checked map[Invariant]int) []Violation {
	f := factsOf(key, ops)
	var out []Violation
	bad := func(inv Invariant, excerpt []history.Operation, format string, args ...any) {
		out = append(out, Violation{Invariant: inv, KeyHash: history.KeyHash(key), Shard: shardOf(ops),
			Message: fmt.Sprintf(format, args...), Excerpt: excerpt})
	}
	for _, inv := range []Invariant{I1, I2, I5, I7, Register} {
		checked[inv]++
	}
	rec, hasRec := ix.record(f.actor, key)
	pays := ix.byRef[f.ref]

	// I1: one claim (one operation id) and one business resource.
	if len(f.opIDs) > 1 {
		bad(I1, effectsExcerpt(ops, f.opIDs), "answers name %d operation ids for one key", len(f.opIDs))
	}
	if len(pays) > 1 {
		bad(I1, effectsExcerpt(ops, ix.paymentIDs(pays, false)), "%d payments carry the key's reference", len(pays))
	}
	if hasRec && len(pays) == 1 && pays[0].OperationID != rec.OperationID {
		bad(I1, effectsExcerpt(ops, []string{pays[0].OperationID, rec.OperationID}),
			"the payment belongs to operation %s, the key's record to %s", pays[0].OperationID, rec.OperationID)
	}

	// I2: an acknowledged success has exactly one effect; any outcome at
	// most one.
	effects := 0
	for _, p := range pays {
		effects += len(ix.charges[p.OperationID])
	}
	switch {
	case f.firstAck != nil && effects > 1:
		bad(I2, effectsExcerpt(ops, ix.paymentIDs(pays, true), *f.firstAck),
			"acknowledged success with %d charges in the ledger", effects)
	case f.firstAck != nil && effects != 1:
		bad(I2, f.acks[:1], "acknowledged success with %d charges in the ledger", effects)
	case f.firstAck == nil && effects > 1:
		bad(I2, effectsExcerpt(ops, ix.paymentIDs(pays, true)), "unacknowledged intent with %d charges in the ledger", effects)
	}
	if f.firstAck != nil && (len(pays) == 0 || pays[0].Status != "succeeded") {
		bad(I2, f.acks[:1], "acknowledged success without a succeeded payment")
	}

	// I5: every success replays the first; a different body gets 422 and
	// changes nothing.
	if fa := f.firstAck; fa != nil {
		for _, a := range f.acks[1:] {
			if a.Status != fa.Status || a.ResponseHash != fa.ResponseHash {
				bad(I5, []history.Operation{*fa, a}, "answer %d differs from the first success %d (status or body)", a.Status, fa.Status)
				break
			}
		}
	}
	for _, op := range ops {
		if op.Acknowledged() && op.BodyHash != f.firstBody {
			bad(I5, []history.Operation{ops[0], op}, "a different body under the key got %d, not 422", op.Status)
		}
		if op.Mismatch() && op.BodyHash == f.firstBody {
			bad(I5, []history.Operation{op}, "the key's own body got 422")
		}
	}
	if ix.opts.LedgerBody != nil && len(pays) == 1 {
		p := pays[0]
		if history.Hash(ix.opts.LedgerBody(p.Amount, p.Currency, p.Reference)) != f.firstBody {
			bad(I5, bodiesExcerpt(ops, f.firstBody), "the payment does not match the key's first body: a changed body took effect")
		}
	}

	// I7: an acknowledged write is in the store, as acknowledged.
	if fa := f.firstAck; fa != nil {
		switch {
		case !hasRec:
			bad(I7, []history.Operation{*fa}, "acknowledged success has no record in the store")
		case rec.State != "COMPLETED":
			bad(I7, []history.Operation{*fa}, "acknowledged success's record is %s", rec.State)
		case fa.OperationID != "" && rec.OperationID != fa.OperationID:
			bad(I7, []history.Operation{*fa}, "record holds operation %s, the answer named %s", rec.OperationID, fa.OperationID)
		case rec.ResponseStatus != fa.Status || (rec.ResponseHash != "" && rec.ResponseHash != fa.ResponseHash):
			bad(I7, []history.Operation{*fa}, "stored response %d differs from the acknowledged %d", rec.ResponseStatus, fa.Status)
		}
	}

	if msg, excerpt := ix.fitRegister(ops); msg != "" {
		bad(Register, excerpt, "%s", msg)
	}
	return out
}

// checkCharges finds double charges of any operation, whether or not the
// history saw its key.
func (ix *index) checkCharges() []Violation {
	var out []Violation
	for op, cs := range ix.charges {
		if len(cs) > 1 {
			v := Violation{Invariant: I2, Shard: -1, Message: fmt.Sprintf("operation %s was charged %d times", op, len(cs))}
			if i := slices.IndexFunc(ix.h.Ops, func(o history.Operation) bool { return o.OperationID == op }); i >= 0 {
				first := ix.h.Ops[i]
				v.KeyHash, v.Shard, v.Excerpt = history.KeyHash(first.Key), first.Shard, []history.Operation{first}
			}
			out = append(out, v)
		}
	}
	return out
}

func shardOf(ops []history.Operation) int {
	if len(ops) == 0 {
		return -1
	}
	return ops[0].Shard
}
