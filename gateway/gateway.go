package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemcoord/idemcoord/authn"
	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/gateway/admission"
	"github.com/idemcoord/idemcoord/gateway/async"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/gateway/replay"
	"github.com/idemcoord/idemcoord/gateway/routing"
	"github.com/idemcoord/idemcoord/gateway/upstream"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/ledger"
	"github.com/idemcoord/idemcoord/region"
	"github.com/idemcoord/idemcoord/store"
)

// Headers the gateway reads and writes.
const (
	HeaderKey         = exchange.HeaderKey
	HeaderOperationID = exchange.HeaderOperationID
	HeaderActor       = exchange.HeaderActor
	HeaderReplayed    = exchange.HeaderReplayed
	HeaderRegion      = routing.HeaderRegion
)

// Authenticator maps a request to its principal (*authn.Verifier).
type Authenticator interface {
	Verify(r *http.Request) (authn.Principal, error)
}

// Config configures a Gateway.
type Config struct {
	// Region names this gateway's region (sent upstream and in logs).
	Region string
	// Worker identifies this instance in lease owners.
	Worker string
	// Store is the store that arbitrates the keys (package store's
	// contract; *sqlstore.Store in production). Its every capability is
	// used: claims, the async queue and its recovery, cancel, fences.
	Store store.Store
	// Auth authenticates callers.
	Auth Authenticator
	// Endpoints are the coordinated endpoints.
	Endpoints []config.Endpoint
	// Next runs the intent. Gateway mode: NewProxy(upstream). Middleware
	// mode: HandlerExecutor(handler).
	Next Executor
	// Ready, if set, is an extra readiness check (etcd reachable).
	Ready func(ctx context.Context) error
	// CutOff, if set, reports whether this instance knows it cannot reach
	// etcd (ownership.Liveness.CutOff). /healthz then still answers 200,
	// with failover.HeaderEtcd: failover.EtcdUnreachable, which the other
	// regions' failover trackers read (failover.PeerProbe).
	CutOff func() bool
	// Shards is the number of shards actors hash to. Default
	// shard.DefaultCount.
	Shards int
	// Logger receives structured logs; keys and bodies never appear. The
	// caller adds the region (and any other instance attributes) to it.
	Logger *slog.Logger
	// Meter records the gateway's metrics. Default: the global provider's.
	Meter metric.Meter
	// Metrics, if set, serves /metrics.
	Metrics http.Handler
	// TracerProvider receives the request, claim, upstream and finish
	// spans (tracing.go). Default: the global provider's (a no-op unless
	// the program set one).
	TracerProvider trace.TracerProvider
	// Owners, if set, is multi-region mode: the ownership directory's
	// cache, consulted (no I/O) to send each coordinated request to the
	// region that owns its actor (route.go). nil is single-region mode.
	Owners Owners
	// Health, if set, is the region liveness view the endpoints' failover
	// policies decide by (a FAILED_OVER shard is refused under reject; an
	// owner that is suspect or failed-but-not-moved is waited for). nil
	// treats every owner as healthy.
	Health RegionHealth
	// Ledger, if set, records the requests routing holds or refuses
	// while their shard is between owners or failed over, and those
	// refused while the store is unavailable, for the incident ledger
	// (ledger.Notes). nil records nothing.
	Ledger ledger.Recorder
	// Topology gives the regions' gateway URLs. Required with Owners; its
	// local region is Region.
	Topology *region.Topology
	// Routing is config.RoutingForward (default: forward once to the owner
	// and relay its answer) or config.RoutingRedirect (answer 307).
	Routing string
	// ForwardTransport carries forwarded requests. Default: a transport of
	// its own, so a drill can cut one region off.
	ForwardTransport http.RoundTripper
	// ForwardTimeout bounds one forwarded request. Default: the endpoint's
	// upstream timeout plus forwardSlack (5s).
	ForwardTimeout time.Duration
	// Recovery configures the loop that runs async work a dead instance
	// left queued (recovery.go).
	Recovery RecoveryConfig
	// Clock drives heartbeats, the lease check before every send, the
	// backoff of result recording and the execution-time estimate behind
	// Retry-After. Default clock.Real(). Tests pass a *clock.Fake (and the
	// same one as the store's sqlstore.Config.DBClock) to move time instead of
	// sleeping.
	Clock clock.Clock
	// FingerprintBudget bounds the request-body bytes fingerprinted at
	// once (503 when it cannot be had in time). Default:
	// NewFingerprintBudget(0, 0, nil), DefaultFingerprintBudget bytes.
	FingerprintBudget *FingerprintBudget
}

// Gateway is the coordinating HTTP handler.
type Gateway struct {
	cfg      Config
	router   *Router
	policies map[string]idempotency.Policy
	// routes is the pipeline's second stage (gateway/routing): owner
	// routing, holds and forwards in multi-region mode, the store's
	// fences in single-region mode.
	routes  *routing.Stage
	metrics *metrics
	tracer  trace.Tracer
	// store and next are Config's Store and Next as the request pipeline
	// calls them: the claim, the upstream call, the finish and the
	// passthrough decorated with their spans (tracing.go).
	store store.Store
	next  Executor
	// fenceLister is Config.Store's fence listing, nil if it has none.
	fenceLister fenceLister
	log         *slog.Logger
	// readiness logs the changes of the /readyz answer.
	readiness readiness
	// outcomes counts and logs the answers of every request (exchange).
	outcomes *exchange.Outcomes
	mux      *http.ServeMux
	// root serves every request the mux routes to "/" (see rootOnly).
	root  http.Handler
	clock clock.Clock
	// work is what outlives a request's answer (async.Work): the async
	// stage's Close waits for it.
	work async.Work
	// async is the stage of async endpoints and of the background loops
	// (gateway/async): the gateway's lifecycle is its.
	async *async.Stage
	// internal are the static prefixes of the endpoints' resolve and
	// cancel paths:
	// the upstream answers them for the gateway only, so they are never
	// proxied for a client.
	internal []string
	// admission is the pipeline's first stage (pipeline.go); shadowed
	// counts shadow mode's decisions (shadow.go).
	admission *admission.Stage
	shadowed  *shadowMetrics
	// replay is the stage that answers with a recorded outcome (and
	// keeps secret response fields out of stored snapshots).
	replay *replay.Stage
	// waits holds retries waiting for runs in flight (wait.go).
	waits *waits
	// upstream is the stage that runs intents upstream and records their
	// results (gateway/upstream).
	upstream *upstream.Stage
}
