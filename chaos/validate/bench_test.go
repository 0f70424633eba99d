package validate

import (
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/chaos/history"
)

// BenchmarkCheckTenMinuteRun checks a history the size of a ten-minute
// mixed drill (50k intents, three attempts each, one in three lost).
func BenchmarkCheckTenMinuteRun(b *testing.B) {
	const keys = 50000
	h := history.History{Start: fxStart}
	st := State{DBNow: fxStart.Add(time.Hour)}
	for k := range keys {
		key, ref, op := fmt.Sprintf("k%d", k), fmt.Sprintf("r%d", k), fmt.Sprintf("op%d", k)
		actor := fmt.Sprintf("demo/a%d", k%64)
		base := int64(k) * 12 * int64(time.Millisecond)
		for a := range 3 {
			o := history.Operation{Kind: history.KindRequest, Call: base + int64(a)*ms, Return: base + int64(a)*ms + ms/2,
				ClientID: k % 64, Actor: actor, Intent: int64(k), Attempt: a + 1, Key: key, Reference: ref, BodyHash: "b",
				SentTo: "us-east", ServedBy: "us-east", Status: 201, OperationID: op, ResponseHash: "r", Shard: k % 64,
				Replayed: a > 0}
			if a == 0 && k%3 == 0 {
				o.Status, o.Error, o.ServedBy, o.OperationID, o.ResponseHash = 0, history.ErrTimeout, "", "", ""
			}
			h.Ops = append(h.Ops, o)
		}
		st.Records = append(st.Records, Record{ActorScope: actor, KeyHash: sha256.Sum256([]byte(key)), OperationID: op,
			State: "COMPLETED", Attempts: 1, Shard: k % 64, Epoch: 1, ResponseStatus: 201, ResponseHash: "r"})
		st.Payments = append(st.Payments, Payment{PaymentID: op, OperationID: op, Actor: actor, Reference: ref, Status: "succeeded"})
		st.Charges = append(st.Charges, Charge{ChargeID: op, OperationID: op, Actor: actor})
	}
	for s := range 64 {
		st.Fences = append(st.Fences, Fence{Shard: s, Epoch: 1, OwnerRegion: "us-east"})
	}
	b.ResetTimer()
	for b.Loop() {
		if res := Check(h, st, Options{}); !res.Safe() {
			b.Fatalf("violations: %v", res.Violations[:1])
		}
	}
}
