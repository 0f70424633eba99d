package validate

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/chaos/history"
)

// Each invariant has a history it must flag and one it must pass: the
// checker can fail, and it fails only on what breaks the invariant.
func TestCheckFlagsEachBrokenInvariantAndPassesItsCleanTwin(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(h *history.History, st *State)
		want   Invariant // "" means no violation at all
	}{
		{"clean run", func(h *history.History, st *State) {}, ""},

		{"I1 two operation ids for one key", func(h *history.History, st *State) {
			h.Ops[1].OperationID = "00000000-0000-4000-8000-000000000002"
		}, I1},
		{"I1 two payments for one key's reference", func(h *history.History, st *State) {
			st.Payments = append(st.Payments, Payment{PaymentID: "p2", OperationID: "op2", Actor: fxActor, Amount: "10.00",
				Currency: "EUR", Reference: fxRef, Status: "failed"})
		}, I1},
		{"I1 clean: payments of other keys", func(h *history.History, st *State) {
			st.Payments = append(st.Payments, Payment{PaymentID: "p2", OperationID: "op2", Actor: fxActor, Amount: "10.00",
				Currency: "EUR", Reference: "ref-other", Status: "failed"})
		}, ""},

		{"I2 acknowledged success charged twice", func(h *history.History, st *State) {
			st.Charges = append(st.Charges, Charge{ChargeID: "c2", OperationID: fxOp, Actor: fxActor})
		}, I2},
		{"I2 acknowledged success never charged", func(h *history.History, st *State) {
			st.Charges = nil
		}, I2},
		{"I2 clean: an ambiguous intent resolved to zero effects", func(h *history.History, st *State) {
			h.Ops = []history.Operation{req(1, 0, 10, 504)}
			h.Ops[0].Intent = 0 // not an intent the traffic retried: no liveness claim
			st.Records[0].State, st.Records[0].ResponseStatus = "OUTCOME_UNKNOWN", 0
			st.Payments[0].Status = "failed"
			st.Charges = nil
		}, ""},

		{"I3 record created under a retired epoch", func(h *history.History, st *State) {
			st.Audit = []Audit{move(1, "eu-west", -5000)}
			st.Fences[0] = Fence{Shard: fxShard, Epoch: 2, OwnerRegion: "eu-west"}
		}, I3},
		{"I3 a probe's stale write committed", func(h *history.History, st *State) {
			h.Ops = append(h.Ops, history.Operation{Seq: 9, Kind: history.KindProbe, Call: 30 * ms, Return: 31 * ms,
				Probe: history.ProbeStaleEpochAccepted, Shard: fxShard})
		}, I3},
		{"I3 clean: record created before its epoch was retired", func(h *history.History, st *State) {
			st.Audit = []Audit{move(1, "eu-west", 5000)}
			st.Fences[0] = Fence{Shard: fxShard, Epoch: 2, OwnerRegion: "eu-west"}
		}, ""},

		{"I4 one epoch moved twice (two owners)", func(h *history.History, st *State) {
			st.Audit = []Audit{move(1, "eu-west", 5000), move(1, "ap-south", 6000)}
			st.Fences[0] = Fence{Shard: fxShard, Epoch: 2, OwnerRegion: "ap-south"}
		}, I4},
		{"I4 the fence went back", func(h *history.History, st *State) {
			st.Audit = []Audit{move(1, "eu-west", 5000), move(2, "us-east", 6000)}
			st.Fences[0] = Fence{Shard: fxShard, Epoch: 2, OwnerRegion: "eu-west"}
		}, I4},
		{"I4 clean: a chain of moves the fence ends on", func(h *history.History, st *State) {
			st.Audit = []Audit{move(1, "eu-west", 5000), move(2, "us-east", 6000)}
			st.Fences[0] = Fence{Shard: fxShard, Epoch: 3, OwnerRegion: "us-east"}
		}, ""},

		{"I5 a replay with another body", func(h *history.History, st *State) {
			h.Ops[1].ResponseHash = history.Hash([]byte(`{"payment_id":"p9"}`))
		}, I5},
		{"I5 a changed body accepted", func(h *history.History, st *State) {
			changed := req(3, 30, 35, 201)
			changed.BodyHash = history.Hash(body("99.00"))
			changed.Replayed = true
			h.Ops = append(h.Ops, changed)
		}, I5},
		{"I5 a changed body's 422 that changed the payment", func(h *history.History, st *State) {
			changed := req(3, 30, 35, 422)
			changed.BodyHash = history.Hash(body("99.00"))
			h.Ops = append(h.Ops, changed)
			st.Payments[0].Amount = "99.00"
		}, I5},
		{"I5 clean: a changed body got 422 and changed nothing", func(h *history.History, st *State) {
			changed := req(3, 30, 35, 422)
			changed.BodyHash = history.Hash(body("99.00"))
			changed.ResponseHash = history.Hash([]byte(`{"type":"fingerprint-mismatch"}`))
			h.Ops = append(h.Ops, changed)
		}, ""},

		{"I6 two regions accepted first runs for one shard at once", func(h *history.History, st *State) {
			other := req(3, 5, 15, 201)
			other.Key, other.Reference, other.OperationID, other.ServedBy, other.Actor = "drill-key-2", "ref-2", "op-b", "eu-west", "demo/a2"
			other.BodyHash = history.Hash(ledgerBody("10.00", "EUR", "ref-2"))
			h.Ops = append(h.Ops, other)
			addKey(st, other)
		}, I6},
		{"I6 clean: the shard moved between the two", func(h *history.History, st *State) {
			other := req(3, 5, 15, 201)
			other.Key, other.Reference, other.OperationID, other.ServedBy, other.Actor = "drill-key-2", "ref-2", "op-b", "eu-west", "demo/a2"
			other.BodyHash = history.Hash(ledgerBody("10.00", "EUR", "ref-2"))
			h.Ops = append(h.Ops, other)
			addKey(st, other)
			st.Audit = []Audit{move(1, "eu-west", 7)}
			st.Fences[0] = Fence{Shard: fxShard, Epoch: 2, OwnerRegion: "eu-west"}
			st.Records[1].Epoch = 2
		}, ""},

		{"I7 acknowledged success missing from the store", func(h *history.History, st *State) {
			st.Records = nil
		}, I7},
		{"I7 acknowledged success stored as still running", func(h *history.History, st *State) {
			st.Records[0].State = "IN_PROGRESS"
			st.Records[0].LeaseExpiresAt = st.DBNow.Add(time.Minute)
		}, I7},

		{"register: a 422 before any write could have happened", func(h *history.History, st *State) {
			early := req(3, -20, -15, 422)
			early.BodyHash = history.Hash(body("99.00"))
			h.Ops = append([]history.Operation{early}, h.Ops...)
		}, Register},
		{"register clean: an unknown outcome, then the success", func(h *history.History, st *State) {
			lost := req(3, -20, -15, 0)
			lost.Error, lost.ServedBy, lost.Status, lost.ResponseHash, lost.OperationID = history.ErrAfterSend, "", 0, "", ""
			h.Ops = append([]history.Operation{lost}, h.Ops...)
		}, ""},

		{"liveness: a record running past its lease", func(h *history.History, st *State) {
			st.Records = append(st.Records, Record{ActorScope: "demo/z", OperationID: "op-z", State: "IN_PROGRESS",
				Shard: 9, Epoch: 1, LeaseExpiresAt: st.DBNow.Add(-time.Second)})
		}, Liveness},
		{"liveness: an intent that ended on a 409", func(h *history.History, st *State) {
			h.Ops = append(h.Ops, req(3, 30, 35, 409))
		}, Liveness},
		{"liveness: a shard without an owner", func(h *history.History, st *State) {
			st.Fences = append(st.Fences, Fence{Shard: 4, Epoch: 1})
		}, Liveness},
		{"liveness clean: a lease still live", func(h *history.History, st *State) {
			st.Records = append(st.Records, Record{ActorScope: "demo/z", OperationID: "op-z", State: "IN_PROGRESS",
				Shard: 9, Epoch: 1, LeaseExpiresAt: st.DBNow.Add(time.Second)})
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, st := cleanHistory(), cleanState()
			tt.mutate(&h, &st)
			res := Check(h, st, opts())
			if tt.want == "" {
				if !res.Safe() {
					t.Fatalf("clean history flagged:\n%s", describe(res.Violations))
				}
				return
			}
			got := res.Of(tt.want)
			if len(got) == 0 {
				t.Fatalf("no %s violation; got:\n%s", tt.want, describe(res.Violations))
			}
			for _, v := range got {
				if v.KeyHash != "" && !slices.IsSortedFunc(v.Excerpt, func(a, b history.Operation) int { return int(a.Call - b.Call) }) {
					t.Errorf("%s excerpt not sorted by call time", v)
				}
			}
		})
	}
}

// addKey stores a second acknowledged key's record, payment and charge.
func addKey(st *State, op history.Operation) {
	r := st.Records[0]
	r.ActorScope, r.KeyHash, r.OperationID = op.Actor, sha256Of(op.Key), op.OperationID
	st.Records = append(st.Records, r)
	st.Payments = append(st.Payments, Payment{PaymentID: "p2", OperationID: op.OperationID, Actor: op.Actor,
		Amount: "10.00", Currency: "EUR", Reference: op.Reference, Status: "succeeded"})
	st.Charges = append(st.Charges, Charge{ChargeID: "c2", OperationID: op.OperationID, Actor: op.Actor})
}

func describe(vs []Violation) string {
	var sb strings.Builder
	for _, v := range vs {
		sb.WriteString("  " + v.String() + "\n")
	}
	return sb.String()
}
