package sqlstore_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/store"
)

// TestClaimsMakeTimeOrderedOperationIDs: a first run's operation id is a
// version 7 UUID carrying its creation time, and the ids of successive
// claims sort in the order the claims were made, so the operation-id
// index grows at its right edge.
func TestClaimsMakeTimeOrderedOperationIDs(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t, newClock())
	var prev []byte
	for i := range 20 {
		before := time.Now().Truncate(time.Millisecond)
		c, err := s.Begin(ctx, request(t, "tenant/alice", fmt.Sprintf("k-%d", i), `{}`))
		after := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		if c.Outcome != store.FirstRun {
			t.Fatalf("claim %d: outcome %v, want a first run", i, c.Outcome)
		}
		id := c.Lease.OperationID
		if v := id.Version(); v != 7 {
			t.Fatalf("claim %d: operation id %s is version %d, want 7", i, id, v)
		}
		sec, nsec := id.Time().UnixTime()
		if at := time.Unix(sec, nsec); at.Before(before) || at.After(after) {
			t.Errorf("claim %d: operation id %s says %s, want the claim's time in [%s, %s]", i, id, at, before, after)
		}
		if prev != nil && bytes.Compare(prev, id[:]) >= 0 {
			t.Errorf("claim %d: operation id %s does not sort after the previous claim's %x", i, id, prev)
		}
		prev = bytes.Clone(id[:])
	}
}
