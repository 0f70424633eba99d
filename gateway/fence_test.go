package gateway_test

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/shard"
)

// TestFenceOwnedByAnotherRegionIsNeverAdopted: after the actor's shard is transferred
// to another region (epoch bumped, owner_region changed in shard_fences),
// this region's claim is refused once as stale, and then the gateway simply
// re-reads the new epoch from the store and writes with it. The fence never
// keeps the old region out: two regions accept writes for one shard (I3/I6).
func TestFenceOwnedByAnotherRegionIsNeverAdopted(t *testing.T) {
	ctx := context.Background()
	var runs atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{}`)
	})
	s := openStore(t, 8)
	shard := shard.Of("t/alice", shard.DefaultCount)
	if _, err := s.Pool().Exec(ctx, `UPDATE shard_fences SET owner_region = 'us-east' WHERE shard = $1`, shard); err != nil {
		t.Fatal(err)
	}
	g, err := gateway.Wrap(gateway.Config{Region: "us-east", Worker: "w", Store: s, Auth: verifier(t),
		Endpoints: endpoints(t, "")}, h)
	srv := served(t, g, err)
	alice := token(t, "alice")

	if st, hd, b := do(t, post(t, srv.URL+"/v1/things", alice, "before-transfer", `{}`)); st != http.StatusCreated {
		t.Fatalf("owner region's first request: %s", describe(st, hd, b))
	}
	// The shard moves to eu-west under a new epoch.
	if _, err := s.Pool().Exec(ctx, `UPDATE shard_fences SET epoch = epoch + 1, owner_region = 'eu-west' WHERE shard = $1`, shard); err != nil {
		t.Fatal(err)
	}
	st, hd, b := do(t, post(t, srv.URL+"/v1/things", alice, "after-transfer", `{}`))
	if runs.Load() != 1 {
		t.Fatalf("us-east ran the intent after its shard moved to eu-west (answer %s; upstream runs %d, want 1): "+
			"a stale region re-reads the new epoch and writes under it", describe(st, hd, b), runs.Load())
	}
}
