package validate

import (
	"slices"
	"testing"

	"github.com/idemcoord/idemcoord/chaos/history"
)

// A violation's excerpt is the shortest part of the key's history that
// shows it: the operations that produced the effects, not every retry.
func TestViolationExcerptsAreTheOperationsThatShowIt(t *testing.T) {
	const opB = "00000000-0000-4000-8000-00000000000b"
	// The fixture's intent, acknowledged and replayed, then a retry that
	// timed out and one more that ran it again under a second operation.
	lost := req(3, 30, 35, 0)
	lost.Error, lost.ServedBy, lost.Status, lost.ResponseHash, lost.OperationID = history.ErrTimeout, "", 0, "", ""
	again := req(4, 40, 45, 201)
	again.OperationID, again.ResponseHash = opB, history.Hash([]byte(`{"payment_id":"p2"}`))
	secondRun := func(st *State, op string) {
		st.Payments = append(st.Payments, Payment{PaymentID: "p2", OperationID: op, Actor: fxActor, Amount: "10.00",
			Currency: "EUR", Reference: fxRef, Status: "succeeded"})
		st.Charges = append(st.Charges, Charge{ChargeID: "c2", OperationID: op, Actor: fxActor})
	}
	tests := []struct {
		name    string
		history []history.Operation
		second  string // the second payment's operation id
		inv     Invariant
		message string
		want    []int64 // excerpt, by Seq
	}{
		{"two operation ids: the first answer naming each", []history.Operation{lost, again}, opB, I1,
			"answers name 2 operation ids for one key", []int64{1, 4}},
		{"two payments: the operations that created them", []history.Operation{lost, again}, opB, I1,
			"2 payments carry the key's reference", []int64{1, 4}},
		{"two charges: the success and the second run", []history.Operation{lost, again}, opB, I2,
			"acknowledged success with 2 charges in the ledger", []int64{1, 4}},
		{"a payment no answer named: the attempts that may have run", []history.Operation{lost},
			"00000000-0000-4000-8000-00000000000c", I1, "2 payments carry the key's reference", []int64{1, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, st := cleanHistory(), cleanState()
			h.Ops = append(h.Ops, tt.history...)
			secondRun(&st, tt.second)
			res := Check(h, st, opts())
			i := slices.IndexFunc(res.Violations, func(v Violation) bool {
				return v.Invariant == tt.inv && v.Message == tt.message
			})
			if i < 0 {
				t.Fatalf("no %s %q; got:\n%s", tt.inv, tt.message, describe(res.Violations))
			}
			var got []int64
			for _, op := range res.Violations[i].Excerpt {
				got = append(got, op.Seq)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("excerpt %v, want operations %v", got, tt.want)
			}
		})
	}
}

// A double charge of one operation names the key and the operation that
// asked for it, even when no other check of the key fired first.
func TestADoubleChargeNamesItsKey(t *testing.T) {
	h, st := cleanHistory(), cleanState()
	st.Charges = append(st.Charges, Charge{ChargeID: "c2", OperationID: fxOp, Actor: fxActor})
	res := Check(h, st, opts())
	i := slices.IndexFunc(res.Violations, func(v Violation) bool {
		return v.Invariant == I2 && v.Message == "operation "+fxOp+" was charged 2 times"
	})
	if i < 0 {
		t.Fatalf("no double charge; got:\n%s", describe(res.Violations))
	}
	v := res.Violations[i]
	if v.KeyHash != history.KeyHash(fxKey) || v.Shard != fxShard || len(v.Excerpt) != 1 || v.Excerpt[0].Seq != 1 {
		t.Errorf("double charge %s with excerpt %v, want the key, its shard and its first operation", v, v.Excerpt)
	}
}
