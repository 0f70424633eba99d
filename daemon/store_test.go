package daemon_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/idemcoord/idemcoord/daemon"
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
		s, err := daemon.OpenSQLStore(ctx, sc)
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
