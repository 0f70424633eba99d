// Package backend is the registry of store backends: a backend is one
// package that implements store.Backend and registers an Opener under a
// name in its init function; a configuration names it in store.backend,
// and idemd, idemctl and the drills open it with Open. Package sqlstore
// registers "postgres" (one DSN, the default), package patronistore
// "patroni" (one Patroni cluster per home region). docs/store.md, "Adding
// a backend".
package backend

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/metric"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/store"
)

// Default is the backend a configuration without store.backend opens:
// one PostgreSQL (or CockroachDB) DSN through package sqlstore.
const Default = config.DefaultStoreBackend

// Opener opens a backend with o. It must check the reachability of what
// it connects to within o.Store.ConnectTimeout, and name the part that
// failed.
type Opener func(ctx context.Context, o Options) (store.Backend, error)

// Options is what an Opener is given.
type Options struct {
	// Store is the configuration's store section (backend, DSN or
	// clusters, pool size, connect timeout, group commit).
	Store config.Store
	// MaxConns, when positive, overrides Store.MaxConns (idemctl and the
	// drills' probes open small pools).
	MaxConns int
	// Migrate applies the backend's schema migrations before serving;
	// without it a store whose schema is missing refuses to open.
	Migrate bool
	// Shards is the deployment's shard count and Home each shard's home
	// region: a backend that places shards (patroni) routes by them. A
	// nil Home means every shard is homed in one region.
	Shards int
	Home   func(shard int) string
	// Endpoints are the configured endpoint names, for per-endpoint
	// metric series.
	Endpoints []string
	// Meter and Logger are the caller's; nil means the global meter
	// provider's and slog.Default().
	Meter  metric.Meter
	Logger *slog.Logger
}

var (
	mu      sync.RWMutex
	openers = map[string]Opener{}
)

// Register makes a backend available under name. It panics when name is
// empty, open is nil, or name is taken: registration happens in init
// functions, and a clash is a build mistake.
func Register(name string, open Opener) {
	mu.Lock()
	defer mu.Unlock()
	if strings.TrimSpace(name) == "" || open == nil {
		panic("backend: Register needs a name and an Opener")
	}
	if _, dup := openers[name]; dup {
		panic(fmt.Sprintf("backend: %q registered twice", name))
	}
	openers[name] = open
}

// Names returns the registered backends' names, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	names := make([]string, 0, len(openers))
	for n := range openers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Open opens the backend o.Store.Backend names (Default when empty). An
// unknown name is an error naming store.backend and the registered
// backends.
func Open(ctx context.Context, o Options) (store.Backend, error) {
	name := o.Store.Backend
	if name == "" {
		name = Default
	}
	mu.RLock()
	open, ok := openers[name]
	mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("store.backend: unknown backend %q (registered: %s)", name, strings.Join(Names(), ", "))
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return open(ctx, o)
}
