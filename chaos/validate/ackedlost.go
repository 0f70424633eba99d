package validate

import (
	"fmt"

	"github.com/idemcoord/idemcoord/chaos/history"
)

// checkAckedLost compares, for every key whose acknowledged answer the
// drill re-sent after healing (history.Operation.AckReplay), the answer
// of that replay with the first acknowledged one: same status, same
// operation (or, without an operation id, the same body). A replay that
// ran the intent afresh, answered otherwise or never got a final answer
// means the store lost an acknowledged write (a failover that promoted a
// member without it, an old primary's history rewound away). It returns
// the violations (I7), and how many keys were replayed.
func (ix *index) checkAckedLost() (lost []Violation, replayed int) {
	for key, ops := range ix.keys {
		var acked *history.Operation
		var last *history.Operation
		sent := false
		for i := range ops {
			op := &ops[i]
			switch {
			case op.AckReplay:
				sent = true
				if op.Ends() {
					last = op
				}
			case acked == nil && op.Acknowledged():
				acked = op
			}
		}
		if !sent || acked == nil {
			continue
		}
		replayed++
		var why string
		switch {
		case last == nil:
			why = "the retry after the drill got no final answer"
		case last.Status != acked.Status:
			why = fmt.Sprintf("the retry after the drill got %d, the client was acknowledged %d", last.Status, acked.Status)
		case acked.OperationID != "" && last.OperationID != acked.OperationID:
			why = fmt.Sprintf("the retry after the drill got operation %s, the client was acknowledged operation %s",
				last.OperationID, acked.OperationID)
		case acked.OperationID == "" && last.ResponseHash != acked.ResponseHash:
			why = "the retry after the drill got another answer than the acknowledged one"
		case !last.Replayed:
			why = "the retry after the drill ran the intent afresh (not a replay)"
		default:
			continue
		}
		lost = append(lost, Violation{Invariant: I7, KeyHash: history.KeyHash(key), Shard: acked.Shard,
			Message: "acknowledged answer lost: " + why, Excerpt: ops})
	}
	return lost, replayed
}
