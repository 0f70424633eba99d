package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel/metric"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/internal/reach"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// StoreOpener opens the store a daemon runs on. It is the one place a
// backend is wired in (docs/store.md): the daemon itself only knows the
// store contract.
type StoreOpener func(ctx context.Context, cfg StoreConfig) (store.Backend, error)

// StoreConfig is what a StoreOpener is given.
type StoreConfig struct {
	// Store is the configuration's store section (DSN, pool size,
	// connect timeout).
	Store config.Store
	// Migrate applies the backend's schema migrations before serving
	// (Options.Migrate); without it a store whose schema is missing
	// refuses to open.
	Migrate bool
	// Endpoints are the configured endpoint names, for the store's
	// per-endpoint metric series.
	Endpoints []string
	// Meter and Logger are the daemon's.
	Meter  metric.Meter
	Logger *slog.Logger
}

// OpenSQLStore is the default StoreOpener: package sqlstore on the DSN's
// CockroachDB or PostgreSQL. It first checks that the DSN's hosts accept
// a connection within store.connect_timeout, so a wrong address fails
// the start in seconds, naming it.
func OpenSQLStore(ctx context.Context, cfg StoreConfig) (store.Backend, error) {
	addrs := reach.StoreDisplay(cfg.Store.DSN)
	cfg.Logger.Info("connecting to store", "addr", strings.Join(addrs, ","), "timeout", cfg.Store.ConnectTimeout.String())
	if err := reach.Store(ctx, cfg.Store.DSN, cfg.Store.ConnectTimeout); err != nil {
		return nil, fmt.Errorf("%w (store.connect_timeout %s)", err, cfg.Store.ConnectTimeout)
	}
	sc := sqlstore.DefaultConfig()
	sc.DSN, sc.Meter, sc.Logger, sc.Migrate = cfg.Store.DSN, cfg.Meter, cfg.Logger, cfg.Migrate
	if cfg.Store.MaxConns != 0 {
		sc.MaxConns = int32(cfg.Store.MaxConns)
	}
	if gc := cfg.Store.GroupCommit; gc.MaxBatch != 0 {
		sc.GroupCommit.MaxBatch = gc.MaxBatch
	}
	if gc := cfg.Store.GroupCommit; gc.MaxQueueWait != 0 {
		sc.GroupCommit.MaxQueueWait = gc.MaxQueueWait
	}
	s, err := sqlstore.Open(ctx, sc)
	if err != nil {
		return nil, &reach.Error{Part: "store", Addrs: addrs, Err: err}
	}
	s.InitMetrics(ctx, cfg.Endpoints)
	return s, nil
}
