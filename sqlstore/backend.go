package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/internal/reach"
	"github.com/idemcoord/idemcoord/store"
	"github.com/idemcoord/idemcoord/store/backend"
)

// The SQL store is the registry's "postgres" backend: one DSN, PostgreSQL
// or CockroachDB.
func init() { backend.Register(backend.Default, OpenBackend) }

// OpenBackend is the "postgres" backend's Opener: it first checks that
// the DSN's hosts accept a connection within store.connect_timeout, so a
// wrong address fails in seconds, naming it; then opens the store with
// the configuration's pool size and group commit.
func OpenBackend(ctx context.Context, o backend.Options) (store.Backend, error) {
	s, err := OpenDSN(ctx, o, o.Store.DSN)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// OpenDSN opens a Store on dsn with o's pool, group commit, migration,
// meter and logger (the patroni backend opens one per cluster).
func OpenDSN(ctx context.Context, o backend.Options, dsn string) (*Store, error) {
	addrs := reach.StoreDisplay(dsn)
	if o.Store.ConnectTimeout <= 0 {
		o.Store.ConnectTimeout = config.DefaultConnectTimeout
	}
	if o.Logger != nil {
		o.Logger.Info("connecting to store", "addr", strings.Join(addrs, ","), "timeout", o.Store.ConnectTimeout.String())
	}
	if err := reach.Store(ctx, dsn, o.Store.ConnectTimeout); err != nil {
		return nil, fmt.Errorf("%w (store.connect_timeout %s)", err, o.Store.ConnectTimeout)
	}
	sc := DefaultConfig()
	sc.DSN, sc.Meter, sc.Migrate = dsn, o.Meter, o.Migrate
	if o.Logger != nil {
		sc.Logger = o.Logger
	}
	switch {
	case o.MaxConns > 0:
		sc.MaxConns = int32(o.MaxConns)
	case o.Store.MaxConns != 0:
		sc.MaxConns = int32(o.Store.MaxConns)
	}
	if gc := o.Store.GroupCommit; gc.MaxBatch != 0 {
		sc.GroupCommit.MaxBatch = gc.MaxBatch
	}
	if gc := o.Store.GroupCommit; gc.MaxQueueWait != 0 {
		sc.GroupCommit.MaxQueueWait = gc.MaxQueueWait
	}
	s, err := Open(ctx, sc)
	if err != nil {
		return nil, &reach.Error{Part: "store", Addrs: addrs, Err: err}
	}
	s.InitMetrics(ctx, o.Endpoints)
	return s, nil
}
