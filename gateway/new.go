package gateway

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/gateway/admission"
	"github.com/idemcoord/idemcoord/gateway/async"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/gateway/replay"
	"github.com/idemcoord/idemcoord/gateway/routing"
	"github.com/idemcoord/idemcoord/gateway/upstream"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/ledger"
	"github.com/idemcoord/idemcoord/shard"
	"go.opentelemetry.io/otel"
)

// New builds a Gateway. It serves requests at once; Start runs its
// background loops (async recovery, the move sweep) and Close stops them
// (lifecycle.Component).
func New(cfg Config) (*Gateway, error) {
	if cfg.Store == nil || cfg.Auth == nil || cfg.Next == nil {
		return nil, errors.New("gateway: Store, Auth and Next are required")
	}
	if cfg.Shards == 0 {
		cfg.Shards = shard.DefaultCount
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.FingerprintBudget == nil {
		cfg.FingerprintBudget = NewFingerprintBudget(0, 0, nil)
	}
	if cfg.Meter == nil {
		cfg.Meter = otel.GetMeterProvider().Meter("github.com/idemcoord/idemcoord/gateway")
	}
	router, err := NewRouter(cfg.Endpoints)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(cfg.Endpoints))
	for i, ep := range cfg.Endpoints {
		names[i] = ep.Name
	}
	m, err := newMetrics(cfg.Meter, names)
	if err != nil {
		return nil, err
	}
	shadowed, err := newShadowMetrics(cfg.Meter)
	if err != nil {
		return nil, err
	}
	cfg.Clock = clock.Or(cfg.Clock)
	if cfg.TracerProvider == nil {
		cfg.TracerProvider = otel.GetTracerProvider()
	}
	tracer := cfg.TracerProvider.Tracer(tracerName)
	// The one store handle and the one executor handle: decorated once,
	// here. The capabilities found by assertion are read off the raw
	// handles before Config lets go of them; nothing after New reaches
	// cfg.Store or cfg.Next (TestRequestCodeReachesNoRawHandle).
	st, next, err := decorate(cfg.TracerProvider, cfg.Meter, tracer, cfg.Store, cfg.Next)
	if err != nil {
		return nil, err
	}
	canceller, _ := cfg.Next.(Canceller)
	lister, _ := cfg.Store.(fenceLister)
	cfg.Store, cfg.Next = nil, nil
	routes, err := routing.New(routing.Config{Region: cfg.Region, Shards: cfg.Shards, Fences: st, Owners: cfg.Owners,
		Health: cfg.Health, Ledger: cfg.Ledger, Topology: cfg.Topology, Routing: cfg.Routing,
		ForwardTransport: cfg.ForwardTransport, ForwardTimeout: cfg.ForwardTimeout, Meter: cfg.Meter,
		Logger: cfg.Logger, Clock: cfg.Clock})
	if err != nil {
		return nil, err
	}
	cfg.Region = routes.Local()
	g := &Gateway{cfg: cfg, router: router, policies: map[string]idempotency.Policy{}, metrics: m,
		log: cfg.Logger, routes: routes, clock: cfg.Clock,
		tracer: tracer, shadowed: shadowed,
		store: st, next: next, fenceLister: lister}
	g.outcomes = &exchange.Outcomes{Log: cfg.Logger, Count: m.request,
		StoreDown: ledger.NoteStoreDown(cfg.Ledger, cfg.Region, cfg.Shards, routes.CachedEpoch)}
	g.admission = admission.New(g.clock, cfg.FingerprintBudget, cfg.Worker, cfg.Endpoints)
	g.waits = newWaits(st, g.clock, g.log, cfg.Endpoints)
	if g.replay, err = replay.New(cfg.Endpoints, next); err != nil {
		return nil, err
	}
	g.upstream = upstream.New(upstream.Config{Claims: st, Executor: next, Stored: g.replay, Clock: g.clock, Logger: g.log,
		Results: m.upstreamResult, Recorded: g.waits.kick, Background: &g.work, Endpoints: cfg.Endpoints,
		HandOff: routes.HandOff})
	g.async = async.New(async.Config{Records: st, Canceller: canceller, Routes: routes, Runner: g.upstream, Work: &g.work,
		Endpoints: cfg.Endpoints, Worker: cfg.Worker, Shards: cfg.Shards, Recovery: cfg.Recovery, Outcomes: g.outcomes,
		CancelCount: m.cancel, Clock: g.clock, Logger: g.log})
	for _, ep := range cfg.Endpoints {
		g.policies[ep.Name] = ep.Policy()
		for _, path := range []string{ep.ResolvePath, ep.CancelPath} {
			if prefix, _, ok := strings.Cut(path, "{"); ok && prefix != "" {
				g.internal = append(g.internal, prefix)
			}
		}
	}
	g.root = g.traceRequests(http.HandlerFunc(g.serve))
	g.mux = g.newMux(g.root)
	return g, nil
}

// Wrap returns a Gateway that coordinates next's endpoints in-process (the
// middleware mode): next runs each intent at most once per key, and sees
// X-Idempotency-Operation-Id and X-Idempotency-Actor on the request.
// cfg.Next is ignored. As with New, call Start to run the background
// loops and Close on shutdown. Single-region (no cfg.Owners), the store's
// shards need this region as their owner first (the store's
// BootstrapFences, as Example_middleware does); Start refuses a store
// without fences, naming that step.
func Wrap(cfg Config, next http.Handler) (*Gateway, error) {
	cfg.Next = HandlerExecutor(next)
	return New(cfg)
}
