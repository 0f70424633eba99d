package daemon_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/daemon"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// closeCounting is a store whose Close the test sees.
type closeCounting struct {
	store.Backend
	closed atomic.Int32
}

func (s *closeCounting) Close() {
	s.closed.Add(1)
	s.Backend.Close()
}

// TestDaemonRunsOnTheStoreItsOpenerReturns: the daemon opens its store
// through Options.OpenStore (a new backend is wired in there, nowhere
// else), hands it the configuration's store section, Migrate and the
// endpoint names, serves on what it returns and closes it.
func TestDaemonRunsOnTheStoreItsOpenerReturns(t *testing.T) {
	cfg := review2Config(t, nil)
	var (
		got    daemon.StoreConfig
		calls  int
		opened *closeCounting
	)
	open := func(ctx context.Context, sc daemon.StoreConfig) (store.Backend, error) {
		calls++
		got = sc
		s, err := daemon.OpenRegistered(ctx, sc)
		if err != nil {
			return nil, err
		}
		opened = &closeCounting{Backend: s}
		return opened, nil
	}
	d, err := daemon.Start(t.Context(), cfg, daemon.Options{Logger: quiet(), Migrate: true, OpenStore: open})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 || got.Store.DSN != cfg.Store.DSN || !got.Migrate || len(got.Endpoints) != len(cfg.Endpoints) {
		t.Errorf("opener called %d times with %+v; want once, with the store section, Migrate and %d endpoints",
			calls, got, len(cfg.Endpoints))
	}
	if d.Store() != store.Backend(opened) {
		t.Errorf("daemon store is %T, want the opener's", d.Store())
	}
	if err := d.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := opened.closed.Load(); n != 1 {
		t.Errorf("store closed %d times, want once", n)
	}
}

// TestTheStoreSectionsGroupCommitReachesTheStore: store.group_commit's
// max_batch and max_queue_wait are what the SQL store runs with; unset,
// it runs with sqlstore's defaults, and max_batch 1 turns it off.
func TestTheStoreSectionsGroupCommitReachesTheStore(t *testing.T) {
	base := review2Config(t, nil).Store
	for _, c := range []struct {
		name string
		set  config.GroupCommit
		want sqlstore.GroupCommit
	}{
		{"unset", config.GroupCommit{}, sqlstore.DefaultGroupCommit},
		{"set", config.GroupCommit{MaxBatch: 32, MaxQueueWait: 20 * time.Millisecond},
			sqlstore.GroupCommit{MaxInFlight: 1, MaxBatch: 32, FullBatchSlots: 1, MaxQueueWait: 20 * time.Millisecond}},
		{"off", config.GroupCommit{MaxBatch: 1}, sqlstore.GroupCommitOff},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := base
			sc.GroupCommit = c.set
			b, err := daemon.OpenRegistered(t.Context(), daemon.StoreConfig{Store: sc, Migrate: true, Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if got := b.(*sqlstore.Store).GroupCommit(); got != c.want {
				t.Errorf("group commit %+v, want %+v", got, c.want)
			}
		})
	}
}
