package validate

import (
	"testing"
	"time"
)

// TestParseFailoverAuditReadsTheControllersRow reads the failover
// controller's audit row (failover.Controller: action region_failover,
// detail "region=... shards_moved=N of M") and nothing else.
func TestParseFailoverAuditReadsTheControllersRow(t *testing.T) {
	at := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	f, ok := ParseFailoverAudit(Audit{At: at, Action: "region_failover", Detail: "region=us-east shards_moved=341 of 342"})
	if !ok || f != (Failover{Region: "us-east", Shards: 341, At: at}) {
		t.Errorf("parsed %+v, %v; want us-east, 341 shards", f, ok)
	}
	if _, ok := ParseFailoverAudit(Audit{At: at, Action: MoveAction, Detail: `shard=3 epoch 1->2 to="eu-west"`}); ok {
		t.Error("a fence move parsed as a region failover")
	}
}
