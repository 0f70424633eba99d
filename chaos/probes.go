package chaos

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcoord/idemcoord/chaos/cluster"
	"github.com/idemcoord/idemcoord/chaos/history"
	"github.com/idemcoord/idemcoord/chaos/probe"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/store"
	"github.com/idemcoord/idemcoord/store/backend"

	_ "github.com/idemcoord/idemcoord/sqlstore" // the "postgres" backend
)

// prober runs the drill-side probes on a store of its own, so a probe
// goes through the same fenced claim the coordinator uses.
type prober struct {
	// store is the backend as the gateways see it: on the replicated
	// store, every cluster, each shard's calls routed to its home's.
	store store.Backend
	// pool is the SQL pool the serialization probe races on (the one
	// PostgreSQL, or the first cluster's).
	pool *pgxpool.Pool
	rec  *history.Recorder
	seed uint64
	n    int64
}

// newProber opens the probes' store over c's: c.DSN(), or the backend c
// says its gateways use (cluster.ProbeStore).
func newProber(ctx context.Context, c interface{ DSN() string }, rec *history.Recorder, seed uint64) (*prober, error) {
	opts, routed := backend.Options{}, false
	if ps, ok := c.(cluster.ProbeStore); ok {
		opts, routed = ps.ProbeStore()
	}
	if !routed {
		opts = backend.Options{Store: config.Store{DSN: c.DSN(), GroupCommit: config.GroupCommit{MaxBatch: 1}}, MaxConns: 4,
			Logger: slog.New(slog.DiscardHandler)}
	}
	b, err := backend.Open(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("chaos: probe store: %w", err)
	}
	pool, err := pgxpool.New(ctx, c.DSN())
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("chaos: probe pool: %w", err)
	}
	return &prober{store: b, pool: pool, rec: rec, seed: seed}, nil
}

func (p *prober) close() { p.store.Close(); p.pool.Close() }

// loop probes every interval until ctx ends; 0 disables it.
func (p *prober) loop(ctx context.Context, interval time.Duration, keep func(error)) {
	if interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.once(ctx, keep)
		}
	}
}

// probeTimeout bounds one probe: a store cut by a fault must not hold the
// loop.
const probeTimeout = 5 * time.Second

// once runs each probe once. Errors (the store unreachable during a fault)
// are kept as stage errors; they record nothing in the history.
func (p *prober) once(ctx context.Context, keep func(error)) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	p.n++
	actor := fmt.Sprintf("chaos-probe/%d-%d", p.seed, p.n%16) // a few shards, revisited as they move
	if _, err := probe.StaleEpoch(ctx, p.store, p.rec, actor, shard.DefaultCount, p.n); err != nil && ctx.Err() == nil {
		keep(err)
	}
	if _, err := probe.Serialization(ctx, p.pool, p.rec); err != nil && ctx.Err() == nil {
		keep(err)
	}
}
