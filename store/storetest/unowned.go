package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/idemcoord/idemcoord/fencing"
)

// TestUnownedShardAdmitsNobody: a shard nobody bootstrapped has no owner,
// and no region may claim it, whatever region its token names.
func (h suite) TestUnownedShardAdmitsNobody(t *testing.T) {
	ctx := context.Background()
	s := h.OpenBare(t)
	for _, region := range []string{"us-east", ""} {
		req := Request(t, "tenant/alice", "k-"+region, `{}`)
		req.Token.Region = region
		var stale *fencing.StaleEpochError
		if c, err := s.Begin(ctx, req); !errors.As(err, &stale) || stale.Owner != "" {
			t.Fatalf("claim from %q on an unowned shard: %v %v, want StaleEpochError", region, c.Outcome, err)
		}
	}
	if got := records(t, s); got != 0 {
		t.Fatalf("records = %d, want 0", got)
	}
}

// TestUpdateOnAShardThatLostItsOwnerIsRefused: the fenced update (finish,
// heartbeat, stage) admits only the owner region, never an empty owner.
func (h suite) TestUpdateOnAShardThatLostItsOwnerIsRefused(t *testing.T) {
	ctx := context.Background()
	s := h.Open(t, NewClock())
	req := Request(t, "tenant/alice", "k", `{}`)
	c, err := s.Begin(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	h.SetFence(t, s, req.Token.Shard, 1, "")
	if err := s.Heartbeat(ctx, c.Lease); !errors.Is(err, fencing.ErrStaleEpoch) {
		t.Fatalf("heartbeat on an unowned shard: %v, want ErrStaleEpoch", err)
	}
	if err := s.Finish(ctx, c.Lease, Completed(`{}`)); !errors.Is(err, fencing.ErrStaleEpoch) {
		t.Fatalf("finish on an unowned shard: %v, want ErrStaleEpoch", err)
	}
}
