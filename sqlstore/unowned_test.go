package sqlstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/idemcoord/idemcoord/fencing"
)

// TestUnownedShardAdmitsNobody: a shard nobody bootstrapped has no owner,
// and no region may claim it, whatever region its token names.
func TestUnownedShardAdmitsNobody(t *testing.T) {
	ctx := context.Background()
	s := openBare(t)
	for _, region := range []string{"us-east", ""} {
		req := request(t, "tenant/alice", "k-"+region, `{}`)
		req.Token.Region = region
		var stale *fencing.StaleEpochError
		if c, err := s.Begin(ctx, req); !errors.As(err, &stale) || stale.Owner != "" {
			t.Fatalf("claim from %q on an unowned shard: %v %v, want StaleEpochError", region, c.Outcome, err)
		}
	}
	if got := count(t, s, `SELECT count(*) FROM idempotency_records`); got != 0 {
		t.Fatalf("records = %d, want 0", got)
	}
}

// TestUpdateOnAShardThatLostItsOwnerIsRefused: the fenced update (finish,
// heartbeat, stage) admits only the owner region, never an empty owner.
func TestUpdateOnAShardThatLostItsOwnerIsRefused(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t, newClock())
	req := request(t, "tenant/alice", "k", `{}`)
	c, err := s.Begin(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE shard_fences SET owner_region = '' WHERE shard = $1`, req.Token.Shard); err != nil {
		t.Fatal(err)
	}
	if err := s.Heartbeat(ctx, c.Lease); !errors.Is(err, fencing.ErrStaleEpoch) {
		t.Fatalf("heartbeat on an unowned shard: %v, want ErrStaleEpoch", err)
	}
	if err := s.Finish(ctx, c.Lease, completed(`{}`)); !errors.Is(err, fencing.ErrStaleEpoch) {
		t.Fatalf("finish on an unowned shard: %v, want ErrStaleEpoch", err)
	}
}

// TestClaimNeedsNoPLpgSQL: the claim is one portable statement, so the
// store leaves no PL/pgSQL function behind (CockroachDB could not run
// idem_claim: no FOUND, no set-returning RETURN QUERY before v25.2).
func TestClaimNeedsNoPLpgSQL(t *testing.T) {
	s, _ := openStore(t, nil)
	if got := count(t, s, `SELECT count(*) FROM pg_proc WHERE proname = 'idem_claim'`); got != 0 {
		t.Fatalf("idem_claim functions = %d, want 0", got)
	}
}
