package daemon

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/metric"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/store"
	"github.com/idemcoord/idemcoord/store/backend"

	// The backends a daemon can run on (store.backend): each registers
	// itself.
	_ "github.com/idemcoord/idemcoord/patronistore"
	_ "github.com/idemcoord/idemcoord/sqlstore"
)

// StoreOpener opens the store a daemon runs on. The default,
// OpenRegistered, opens the backend store.backend names from the
// store/backend registry (docs/store.md); the daemon itself only knows
// the store contract.
type StoreOpener func(ctx context.Context, cfg StoreConfig) (store.Backend, error)

// StoreConfig is what a StoreOpener is given.
type StoreConfig struct {
	// Store is the configuration's store section (backend, DSN or
	// clusters, pool size, connect timeout).
	Store config.Store
	// Migrate applies the backend's schema migrations before serving
	// (Options.Migrate); without it a store whose schema is missing
	// refuses to open.
	Migrate bool
	// Shards is the deployment's shard count and Home each shard's home
	// region (the topology's), for backends that place shards by home.
	Shards int
	Home   func(shard int) string
	// Endpoints are the configured endpoint names, for the store's
	// per-endpoint metric series.
	Endpoints []string
	// Meter and Logger are the daemon's.
	Meter  metric.Meter
	Logger *slog.Logger
}

// OpenRegistered is the default StoreOpener: the backend store.backend
// names ("postgres", one DSN, when unset), opened through the
// store/backend registry, which checks that what it connects to answers
// within store.connect_timeout and names it otherwise.
func OpenRegistered(ctx context.Context, cfg StoreConfig) (store.Backend, error) {
	return backend.Open(ctx, backend.Options{Store: cfg.Store, Migrate: cfg.Migrate, Shards: cfg.Shards, Home: cfg.Home,
		Endpoints: cfg.Endpoints, Meter: cfg.Meter, Logger: cfg.Logger})
}
