package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/idemcoord/idemcoord/chaos/history"
)

// describeOp formats one operation of an excerpt on one line, its key
// hashed.
func describeOp(op history.Operation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d [%s, %s] %s", op.Seq, at(op.Call), at(op.Return), op.Kind)
	switch op.Kind {
	case history.KindRequest:
		fmt.Fprintf(&b, " client=%d intent=%d attempt=%d key=%s body=%.8s sent_to=%s", op.ClientID, op.Intent,
			op.Attempt, history.KeyHash(op.Key), op.BodyHash, op.SentTo)
		if op.Error != history.ErrNone {
			fmt.Fprintf(&b, " error=%s", op.Error)
		} else {
			fmt.Fprintf(&b, " -> %d served_by=%s op=%s resp=%.8s", op.Status, op.ServedBy, op.OperationID, op.ResponseHash)
			if op.Replayed {
				b.WriteString(" replayed")
			}
		}
	case history.KindProbe:
		fmt.Fprintf(&b, " %s shard=%d %s", op.Probe, op.Shard, op.Detail)
	default:
		b.WriteString(" " + op.Detail)
	}
	return b.String()
}

func at(ns int64) string {
	if ns > int64(100*365*24*time.Hour) {
		return "never"
	}
	return fmt.Sprintf("%.3fs", float64(ns)/float64(time.Second))
}
