package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemcoord/idemcoord/authn"
	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/gateway/admission"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/gateway/replay"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/lifecycle"
	"github.com/idemcoord/idemcoord/ledger"
	"github.com/idemcoord/idemcoord/region"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/store"
)

// Headers the gateway reads and writes.
const (
	HeaderKey         = exchange.HeaderKey
	HeaderOperationID = exchange.HeaderOperationID
	HeaderActor       = exchange.HeaderActor
	HeaderReplayed    = exchange.HeaderReplayed
	HeaderRegion      = "X-Idempotency-Region"
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
	fences   *fenceCache
	routes   *routing
	metrics  *metrics
	tracer   trace.Tracer
	// store and next are Config's Store and Next as the request pipeline
	// calls them: the claim, the upstream call, the finish and the
	// passthrough decorated with their spans (tracing.go).
	store store.Store
	next  Executor
	// canceller is Config.Next's cancel capability, nil if it has none.
	canceller Canceller
	// fenceLister is Config.Store's fence listing, nil if it has none.
	fenceLister fenceLister
	log         *slog.Logger
	// outcomes counts and logs the answers of every request (exchange).
	outcomes *exchange.Outcomes
	mux      *http.ServeMux
	// root serves every request the mux routes to "/" (see rootOnly).
	root  http.Handler
	clock clock.Clock
	// durations estimates each endpoint's execution time (Retry-After).
	durations map[string]*durationEstimate
	closeMu   sync.Mutex
	closing   bool
	bg        sync.WaitGroup
	lc        lifecycle.Runner // the background loops (Start)
	tickers   []clock.Ticker   // theirs, started by Start
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
}

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
	routes, err := newRouting(&cfg, st, m)
	if err != nil {
		return nil, err
	}
	g := &Gateway{cfg: cfg, router: router, policies: map[string]idempotency.Policy{}, metrics: m,
		log: cfg.Logger, fences: newFenceCache(st, cfg.Shards, cfg.Region), routes: routes, clock: cfg.Clock,
		durations: map[string]*durationEstimate{}, tracer: tracer, shadowed: shadowed,
		store: st, next: next, canceller: canceller, fenceLister: lister}
	g.outcomes = &exchange.Outcomes{Log: cfg.Logger, Count: m.request,
		StoreDown: ledger.NoteStoreDown(cfg.Ledger, cfg.Region, cfg.Shards, func(actor string) int64 {
			tok, _ := g.fences.cached(actor)
			return tok.Epoch
		})}
	g.admission = admission.New(g.clock, cfg.FingerprintBudget, cfg.Worker, cfg.Endpoints)
	g.waits = newWaits(st, g.clock, g.log, cfg.Endpoints)
	if g.replay, err = replay.New(cfg.Endpoints, next); err != nil {
		return nil, err
	}
	for _, ep := range cfg.Endpoints {
		g.policies[ep.Name] = ep.Policy()
		g.durations[ep.Name] = &durationEstimate{}
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

// newMux routes the gateway's own paths, and every other to root.
func (g *Gateway) newMux(root http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", g.readyz)
	mux.HandleFunc("GET /v1/operations/{id}", g.operation)
	mux.HandleFunc("DELETE /v1/operations/{id}", g.cancelOperation)
	if g.cfg.Metrics != nil {
		mux.Handle("GET /metrics", g.cfg.Metrics)
	}
	mux.Handle("/", root)
	return mux
}

// ownPaths are the paths, and prefixes, newMux routes elsewhere than to
// root.
var ownPaths = []string{"/healthz", "/readyz", "/metrics", "/v1/operations/"}

// rootOnly reports whether the mux would serve r with its root handler
// as it is (no redirect to a cleaned path, none of the gateway's own
// paths): a clean path outside ownPaths, in a request that is neither
// CONNECT nor "*". Such a request skips the mux's matching.
func rootOnly(r *http.Request) bool {
	if r.Method == http.MethodConnect || r.RequestURI == "*" {
		return false
	}
	p := r.URL.EscapedPath()
	if p == "" || p[0] != '/' || path.Clean(p) != p {
		return false
	}
	for _, own := range ownPaths {
		if strings.HasPrefix(p, own) {
			return false
		}
	}
	return true
}

// Start starts the gateway's background loops, the async recovery loop
// and the move sweep (each only when an endpoint needs it), and returns;
// they run until ctx ends or Close. The gateway serves requests without
// them (before Start, or after ctx ended), but nothing then takes over
// queued or fenced operations. Start is lifecycle.Component's, as Close,
// Done and Err are.
//
// A single-region gateway (no Owners) refuses to start on a store whose
// shard fences give its region nothing to serve, with an error naming
// the missing step (the store's BootstrapFences, wrapping
// store.ErrNotBootstrapped) instead of answering every request 503.
func (g *Gateway) Start(ctx context.Context) error {
	if err := g.checkFences(ctx); err != nil {
		for _, t := range g.tickers {
			t.Stop()
		}
		return err
	}
	runs := []func(context.Context) error{func(ctx context.Context) error { <-ctx.Done(); return nil }}
	if r := g.recoveryLoop(); r != nil {
		runs = append(runs, r)
	}
	if m := g.moveSweepLoop(); m != nil {
		runs = append(runs, m)
	}
	err := g.lc.Start(ctx, nil, runs...)
	if err != nil { // the runs never started: their tickers stop here
		for _, t := range g.tickers {
			t.Stop()
		}
	}
	return err
}

// Done is closed once the gateway's loops stopped (Close, or the context
// given to Start ended).
func (g *Gateway) Done() <-chan struct{} { return g.lc.Done() }

// Err says why the loops stopped: nil while they run and after Close, the
// context's cause when the context given to Start ended.
func (g *Gateway) Err() error { return g.lc.Err() }

// ServeHTTP implements http.Handler.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if rootOnly(r) {
		r.Pattern = "/" // as the mux sets it
		g.root.ServeHTTP(w, r)
		return
	}
	g.mux.ServeHTTP(w, r)
}

// Close stops accepting async work, stops the async recovery loop and the
// move sweep, and waits for background executions to finish and record
// their results (each is bounded by its endpoint's upstream timeout), for results
// whose recording is being retried after a store error (bounded by
// recordBudget), and for the reads of runs that retries wait on (they
// end with their last waiter). Call it after the HTTP server has shut
// down.
func (g *Gateway) Close() error {
	g.closeMu.Lock()
	g.closing = true
	g.closeMu.Unlock()
	err := g.lc.Close()
	g.bg.Wait()
	g.waits.close()
	return err
}

func (g *Gateway) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	// The body names the part that is not usable (store, etcd liveness,
	// ownership cache) and why, for the operator reading a failed probe.
	if err := g.store.Ping(ctx); err != nil {
		http.Error(w, "not ready: store: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	if g.cfg.Ready != nil {
		if err := g.cfg.Ready(ctx); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
	}
	w.Write([]byte("ready\n"))
}

// serve authenticates and routes one request.
func (g *Gateway) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	// Identity headers are the gateway's to set, never the client's. The
	// hop header is kept aside for routing, which only refuses on it.
	hop := r.Header.Get(HeaderForwardedFrom)
	stripReserved(r.Header)
	r = withForwardedFrom(r, hop)
	p, authErr := g.cfg.Auth.Verify(r)
	ep, ok := g.router.Match(r.Method, r.URL.Path)
	if !ok || ep.Shadow() {
		w = exchange.WithKeyStatus(w, r, KeyStatusIgnored) // no key is honoured here
	} else {
		w = exchange.WithKeyStatus(w, r, KeyStatusRejected) // until the protocol decides
	}
	if !ok && g.isInternal(r.URL.Path) {
		exchange.WriteProblem(w, exchange.Problem{Type: "not-found", Title: "no such route", Status: http.StatusNotFound}, 0)
		return
	}
	if !ok && authErr != nil && len(r.Header.Values("Authorization")) > 0 {
		// A token that is present but does not verify is refused on every
		// route: passing it on would let the upstream answer as if the
		// caller were anonymous, or judge a token the gateway rejected.
		g.unauthorized(w, r, "", start, authErr)
		return
	}
	if !ok {
		// Uncoordinated: the upstream does its own authorisation; it gets
		// the actor only when the gateway verified one.
		actor := ""
		if authErr == nil {
			actor = p.Scope()
		}
		g.passthrough(w, r, actor, "", start)
		return
	}
	if authErr != nil {
		g.unauthorized(w, r, ep.Name, start, authErr)
		return
	}
	if ep.Shadow() {
		g.shadow(w, r, ep, p.Scope(), start)
		return
	}
	g.coordinate(w, r, ep, p.Scope(), start)
}

// unauthorized answers 401 (writeUnauthorized): nothing was executed.
func (g *Gateway) unauthorized(w http.ResponseWriter, r *http.Request, endpoint string, start time.Time, err error) {
	g.metrics.request(r.Context(), endpoint, "unauthorized", start)
	exchange.WriteUnauthorized(w, err)
}

// reservedPrefix starts every header the gateway sets for the upstream.
const reservedPrefix = "x-idempotency-"

// stripReserved deletes every client header that names a reserved
// X-Idempotency-* header under any spelling: header names are
// case-insensitive, and CGI, WSGI, PHP and Rack upstreams fold '-' and '_'
// into one variable (HTTP_X_IDEMPOTENCY_ACTOR), so X_Idempotency_Actor
// would reach them as the gateway's own identity header.
func stripReserved(h http.Header) {
	for name := range h {
		if reserved(name) {
			delete(h, name)
		}
	}
}

// reserved reports whether name starts with reservedPrefix, in any case
// and with '_' for '-', compared byte by byte without a lowered copy. (A
// non-ASCII byte never matches: no character lowers to the prefix's ASCII
// in as many bytes.)
func reserved(name string) bool {
	if len(name) < len(reservedPrefix) {
		return false
	}
	for i := range len(reservedPrefix) {
		c := name[i]
		switch {
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		case c == '_':
			c = '-'
		}
		if c != reservedPrefix[i] {
			return false
		}
	}
	return true
}

// isInternal reports whether path is under a resolve path.
func (g *Gateway) isInternal(path string) bool {
	path = "/" + strings.TrimLeft(path, "/")
	for _, p := range g.internal {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// passthrough sends an uncoordinated request upstream: an unmatched route,
// or a request without a key on an endpoint where the key is optional.
func (g *Gateway) passthrough(w http.ResponseWriter, r *http.Request, actor, endpoint string, start time.Time) {
	g.metrics.request(r.Context(), endpoint, "passthrough", start)
	if actor != "" {
		r.Header.Set(HeaderActor, actor)
	}
	g.next.Pass(w, r)
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
