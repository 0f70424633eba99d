package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/store"
)

// TestTakenOverLeaseAdoptsNothing: the adoption of a moved version is for
// the lease's own writes only. After a takeover the record's owner is the
// new one, and the old worker's Finish is refused and changes nothing.
func (h suite) TestTakenOverLeaseAdoptsNothing(t *testing.T) {
	ctx := context.Background()
	clock := NewClock()
	s := h.Open(t, clock)
	req := Request(t, "tenant/alice", "taken", `{}`)
	old := MustBegin(t, s, req, store.FirstRun)
	clock.Advance(31 * time.Second)
	taken := MustBegin(t, s, req, store.TakenOver)
	if err := s.Heartbeat(ctx, taken.Lease); err != nil {
		t.Fatal(err)
	}
	before := h.Raw(t, s, "")
	if err := s.Finish(ctx, old.Lease, Completed(`{"by":"old"}`)); !errors.Is(err, store.ErrLostOwnership) {
		t.Errorf("old worker's Finish = %v, want ErrLostOwnership", err)
	}
	if after := h.Raw(t, s, ""); after != before {
		t.Errorf("old worker changed the record:\nbefore %s\nafter  %s", before, after)
	}
}
