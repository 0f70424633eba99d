package daemon_test

import (
	"context"
	"errors"
	"testing"

	"github.com/idemcoord/idemcoord/daemon"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// TestStartBootstrapsFencesAndRefusesAnotherShardCount: the first daemon
// on a store gives every shard to its home region (single-region mode:
// the local one), and a daemon configured with another shard count than
// the store's refuses to start.
func TestStartBootstrapsFencesAndRefusesAnotherShardCount(t *testing.T) {
	ctx := context.Background()
	cfg := review2Config(t, nil)
	d, err := daemon.Start(ctx, cfg, daemon.Options{Logger: quiet(), Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	d.Shutdown(ctx)
	s, err := sqlstore.Open(ctx, sqlstore.Config{Migrate: true, DSN: cfg.Store.DSN, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fences, err := s.Fences(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(fences) != cfg.Shards {
		t.Fatalf("%d fence rows, want %d", len(fences), cfg.Shards)
	}
	for _, f := range fences {
		if f.Owner != cfg.Region || f.Epoch != 1 {
			t.Fatalf("shard %d: epoch %d owner %q, want epoch 1 owned by %s", f.Shard, f.Epoch, f.Owner, cfg.Region)
		}
	}

	other := *cfg
	other.Shards = 16
	d2, err := daemon.Start(ctx, &other, daemon.Options{Logger: quiet(), Migrate: true})
	var mm *store.ShardCountMismatchError
	if !errors.As(err, &mm) || mm.Store != cfg.Shards || mm.Configured != 16 {
		if d2 != nil && err == nil {
			d2.Shutdown(ctx)
		}
		t.Fatalf("start with 16 shards on a %d-shard store: %v, want ShardCountMismatchError", cfg.Shards, err)
	}
}
