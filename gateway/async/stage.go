// Package async is the gateway's stage for async endpoints and the work
// that outlives a request: the 202 and the queued request (accept), the
// recovery of queued work a dead instance left, the move sweep that
// settles what a region that lost its shard left in flight, and the
// cancel rounds of DELETE /v1/operations/{id}. It is a lifecycle
// component of its own (Start, Close, Done, Err): the recovery loop and
// the move sweep run under it, and Close waits for them and for the
// background runs (Work).
//
// The stage holds only what it uses: the (decorated) store's queue,
// claims and cancels, the upstream's cancel, routing's fences and
// placement (what this region may take over), what runs a queued intent
// (the upstream stage, through Runner), and its own metric and log.
package async

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/gateway/routing"
	"github.com/idemcoord/idemcoord/gateway/upstream"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/lifecycle"
	"github.com/idemcoord/idemcoord/store"
)

// storeCallTimeout bounds one store call (exchange.StoreCallTimeout).
var storeCallTimeout = exchange.StoreCallTimeout

// Runner runs a queued intent, or settles one taken over without its
// request (the upstream stage).
type Runner interface {
	// RunQueued runs c's intent under claim and records the result; it
	// reports whether it is recorded.
	RunQueued(ctx context.Context, c *exchange.Request, claim store.Claim) (recorded bool)
	// SettleTaken records the resolve path's verdict on an operation
	// taken over from a fenced holder.
	SettleTaken(ctx context.Context, c *exchange.Request, lease *store.Lease)
}

// Store is the part of the (decorated) store the stage uses: the queue,
// the cancels, and a claim's release and lookup.
type Store interface {
	store.Queue
	store.Cancels
	Release(ctx context.Context, l *store.Lease, summary string) error
	Lookup(ctx context.Context, actor string, opID uuid.UUID) (store.Record, error)
}

// Config is what the async stage is built from.
type Config struct {
	// Records is the (decorated) store: the queue, releases, lookups
	// and cancels.
	Records Store
	// Canceller is the executor's cancel, nil when it has none (a wrapped
	// handler).
	Canceller upstream.Canceller
	// Routes is the routing stage: the cancel's rounds, the fences a
	// takeover writes with, and what this region may take over.
	Routes *routing.Stage
	// Runner runs the queued intents (the upstream stage).
	Runner Runner
	// Work owns the background runs (shared with the upstream stage's
	// background recording).
	Work *Work
	// Endpoints are the coordinated endpoints; Worker names this instance
	// in leases; Shards is the shard count.
	Endpoints []config.Endpoint
	Worker    string
	Shards    int
	// Recovery configures the recovery loop and the move sweep.
	Recovery RecoveryConfig
	// Outcomes counts and logs the answers of the requests it runs.
	Outcomes *exchange.Outcomes
	// CancelCount counts one cancel decision of endpoint by outcome.
	CancelCount func(ctx context.Context, endpoint, outcome string)
	// Clock stamps the recovered runs' calls.
	Clock  clock.Clock
	Logger *slog.Logger
}

// Stage is the async stage.
type Stage struct {
	store     Store
	canceller upstream.Canceller
	routes    *routing.Stage
	runner    Runner
	work      *Work
	endpoints []config.Endpoint
	policies  map[string]idempotency.Policy
	worker    string
	shards    int
	recovery  RecoveryConfig
	outcomes  *exchange.Outcomes
	cancels   func(ctx context.Context, endpoint, outcome string)
	clock     clock.Clock
	log       *slog.Logger
	lc        lifecycle.Runner // the recovery loop and the move sweep
	tickers   []clock.Ticker   // theirs, started by Start
}

var _ lifecycle.Component = (*Stage)(nil)

// New returns the async stage; Start runs its loops.
func New(cfg Config) *Stage {
	s := &Stage{store: cfg.Records, canceller: cfg.Canceller, routes: cfg.Routes, runner: cfg.Runner, work: cfg.Work,
		endpoints: cfg.Endpoints, policies: map[string]idempotency.Policy{}, worker: cfg.Worker, shards: cfg.Shards,
		recovery: cfg.Recovery, outcomes: cfg.Outcomes, cancels: cfg.CancelCount, clock: clock.Or(cfg.Clock), log: cfg.Logger}
	for _, ep := range cfg.Endpoints {
		s.policies[ep.Name] = ep.Policy()
	}
	return s
}

// endpoint returns the configured endpoint named name.
func (s *Stage) endpoint(name string) *config.Endpoint {
	for i := range s.endpoints {
		if s.endpoints[i].Name == name {
			return &s.endpoints[i]
		}
	}
	return nil
}

// newRequest is the exchange.Request of a run this stage starts without a
// client (recovered or swept): its answer goes nowhere.
func (s *Stage) newRequest(r *http.Request, ep *config.Endpoint, actor string, body []byte) *exchange.Request {
	return &exchange.Request{W: discard{}, R: r, Endpoint: ep, Policy: s.policies[ep.Name], Actor: actor, Body: body,
		Start: time.Now(), Outcomes: s.outcomes}
}

// Defaults for RecoveryConfig.
const (
	// DefaultRecoveryInterval is how often an instance looks for queued
	// async work whose instance died. A stranded task waits at most its
	// lease plus this; a scan is one indexed read, cheap at this rate.
	DefaultRecoveryInterval = 5 * time.Second
	// DefaultRecoveryBatch bounds the tasks one scan takes over: each runs
	// an upstream call at once, and an instance that just came back from
	// an outage must not flood the upstream with a region's backlog.
	DefaultRecoveryBatch = 16
)

// RecoveryConfig configures the loop that runs async work stranded by a
// dead instance: PENDING or IN_PROGRESS operations whose lease expired and
// whose request the store kept (see accept).
type RecoveryConfig struct {
	// Interval between scans. Default DefaultRecoveryInterval.
	Interval time.Duration
	// Batch bounds the operations taken over per scan. Default
	// DefaultRecoveryBatch.
	Batch int
	// Clock drives the interval. Default clock.Real(); tests pass a
	// *clock.Fake and advance it. (Lease expiry is the store's time.)
	Clock clock.Clock
	// Disabled turns the loop off, and the move sweep (inflight.go); the
	// instance still serves retries.
	Disabled bool
	// MoveSweepInterval is how often, besides at each change of the
	// directory cache, the cache is looked at for shards this region has
	// just received, whose operations left in flight by the old owner are
	// settled at once on endpoints that take over fenced operations
	// (inflight.go). Default DefaultMoveSweepInterval. Driven by Clock.
	MoveSweepInterval time.Duration
}

// discard is the ResponseWriter of a recovered run: its client got its 202
// long ago and reads the result from the status URL.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}
