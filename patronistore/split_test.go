package patronistore_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/patronistore"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
	"github.com/idemcoord/idemcoord/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// openClusters opens one SQL store per database, migrated.
func openClusters(t *testing.T, dsns []string) []patronistore.Cluster {
	t.Helper()
	out := make([]patronistore.Cluster, len(dsns))
	for i, dsn := range dsns {
		s, err := sqlstore.Open(context.Background(), sqlstore.Config{Migrate: true, DSN: dsn, MaxConns: 8, Seed: uint64(i + 1)})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = patronistore.Cluster{Name: []string{"east-1", "east-2"}[i], Store: s}
	}
	return out
}

// TestAShardRangeMovedToAnotherClusterUnderItsFence splits a cluster: a
// range of shards with a finished operation and a running one moves to a
// second cluster. Afterwards the records answer from the new cluster
// (the finished one replayed, the running one still held), the source
// keeps neither records nor an owner (a process still routing there is
// refused), and a store opened with the new map serves the range.
func TestAShardRangeMovedToAnotherClusterUnderItsFence(t *testing.T) {
	ctx := context.Background()
	dsns := []string{pgtest.NewDatabase(t), pgtest.NewDatabase(t)}
	everything := func(int) int { return 0 }
	s, err := patronistore.New(openClusters(t, dsns), shard.DefaultCount, everything, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.BootstrapFences(ctx, shard.DefaultCount, func(int) string { return storetest.Region }); err != nil {
		t.Fatal(err)
	}
	done := storetest.Request(t, "tenant/alice", "paid", `{"amount":1}`)
	c := storetest.MustBegin(t, s, done, store.FirstRun)
	if err := s.Finish(ctx, c.Lease, storetest.Completed(`{"ok":true}`)); err != nil {
		t.Fatal(err)
	}
	running := storetest.Request(t, "tenant/alice", "paying", `{"amount":2}`)
	storetest.MustBegin(t, s, running, store.FirstRun)
	moved := shard.Of("tenant/alice", shard.DefaultCount)
	rangeOf := []int{moved - moved%8}
	for n := rangeOf[0] + 1; n < rangeOf[0]+8; n++ {
		rangeOf = append(rangeOf, n)
	}

	if err := s.MoveShards(ctx, "oncall", "INC-9: split east", rangeOf, 1); err != nil {
		t.Fatal(err)
	}
	if got := s.ClusterOf(moved); got != 1 {
		t.Fatalf("shard %d routes to cluster %d after the move, want 1", moved, got)
	}
	storetest.MustBegin(t, s, done, store.Replayed)
	storetest.MustBegin(t, s, running, store.InFlight)
	if epoch, owner, err := s.Fence(ctx, moved); err != nil || epoch != 1 || owner != storetest.Region {
		t.Errorf("the moved fence = %d, %q, %v; want epoch 1 owned by %s (ownership does not change)", epoch, owner, err, storetest.Region)
	}

	// The source: no records left, and a writer still routed there is
	// refused by the fence, never served from an empty table.
	src := s.Clusters()[0].Store
	if _, err := src.Read(ctx, done.Scope); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("source still holds the moved record: %v", err)
	}
	if _, err := src.Begin(ctx, done); !errors.Is(err, fencing.ErrStaleEpoch) {
		t.Errorf("a claim on the source after the move = %v, want a stale-epoch refusal", err)
	}
	// Run again: it finds the move done and changes nothing.
	if err := s.MoveShards(ctx, "oncall", "INC-9: split east", rangeOf, 1); err != nil {
		t.Fatal(err)
	}
	var audited int
	for _, action := range []string{"move_shards_out", "move_shards_in"} {
		n, err := s.CountAudit(ctx, store.AuditFilter{Action: action})
		if err != nil {
			t.Fatal(err)
		}
		audited += n
	}
	if audited < 2 {
		t.Errorf("%d move audit rows, want one on each cluster at least", audited)
	}

	// Another process with the new map in its configuration.
	newMap := func(n int) int {
		if n >= rangeOf[0] && n <= rangeOf[len(rangeOf)-1] {
			return 1
		}
		return 0
	}
	s2, err := patronistore.New(openClusters(t, dsns), shard.DefaultCount, newMap, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	storetest.MustBegin(t, s2, done, store.Replayed)
	fresh := storetest.Request(t, "tenant/alice", "new", `{}`)
	storetest.MustBegin(t, s2, fresh, store.FirstRun)
}
