package validate

import (
	"crypto/sha256"
	"encoding/json"
	"time"

	"github.com/idemcoord/idemcoord/chaos/history"
)

// The clean fixture: one intent of actor demo/a1 on shard 3, acknowledged
// by us-east, retried once (a replay), with its record, its payment and
// its one charge; shard 3 at epoch 1 owned by us-east.
const (
	fxActor = "demo/a1"
	fxKey   = "drill-key-1"
	fxRef   = "ref-1"
	fxOp    = "00000000-0000-4000-8000-000000000001"
	fxShard = 3
	ms      = int64(time.Millisecond)
)

var fxStart = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func body(amount string) []byte {
	b, _ := json.Marshal(map[string]string{"amount": amount, "currency": "EUR", "reference": fxRef})
	return b
}

func ledgerBody(amount, currency, reference string) []byte {
	b, _ := json.Marshal(map[string]string{"amount": amount, "currency": currency, "reference": reference})
	return b
}

var (
	fxBody = history.Hash(body("10.00"))
	fxResp = history.Hash([]byte(`{"payment_id":"p1"}`))
)

// req returns a request operation of the fixture's key.
func req(seq, call, ret int64, status int) history.Operation {
	return history.Operation{Seq: seq, Kind: history.KindRequest, Call: call * ms, Return: ret * ms, ClientID: 1,
		Actor: fxActor, Intent: 1, Attempt: int(seq), Endpoint: "POST /v1/payments", Key: fxKey, Reference: fxRef,
		BodyHash: fxBody, SentTo: "us-east", ServedBy: "us-east", Status: status, OperationID: fxOp,
		ResponseHash: fxResp, Shard: fxShard}
}

func cleanHistory() history.History {
	first := req(1, 0, 10, 201)
	replay := req(2, 20, 25, 201)
	replay.Replayed = true
	return history.History{Start: fxStart, Ops: []history.Operation{first, replay}}
}

func cleanState() State {
	return State{
		Records: []Record{{ActorScope: fxActor, Endpoint: "create-payment", KeyHash: sha256.Sum256([]byte(fxKey)),
			OperationID: fxOp, State: "COMPLETED", Attempts: 1, Shard: fxShard, Epoch: 1, ResponseStatus: 201,
			ResponseHash: fxResp, CreatedAt: fxStart, UpdatedAt: fxStart.Add(10 * time.Millisecond)}},
		Fences:   []Fence{{Shard: fxShard, Epoch: 1, OwnerRegion: "us-east"}},
		Payments: []Payment{{PaymentID: "p1", OperationID: fxOp, Actor: fxActor, Amount: "10.00", Currency: "EUR", Reference: fxRef, Status: "succeeded"}},
		Charges:  []Charge{{ChargeID: "c1", OperationID: fxOp, Actor: fxActor}},
		DBNow:    fxStart.Add(time.Second),
	}
}

func opts() Options { return Options{LedgerBody: ledgerBody} }

// move returns an audit row moving the fixture's shard from epoch from to
// region to, at offset atMs on the history's timeline.
func move(from int64, to string, atMs int64) Audit {
	m := Move{Shard: fxShard, From: from, To: to}
	return Audit{At: fxStart.Add(time.Duration(atMs * ms)), Action: MoveAction,
		Detail: fmtMove(m)}
}

func sha256Of(s string) [32]byte { return sha256.Sum256([]byte(s)) }
