// Package upstream is the gateway's stage that runs an intent upstream:
// the executors (Proxy in gateway mode, HandlerExecutor in middleware
// mode), and a run under the claim's lease (the check before the send,
// the heartbeat, the stages reported while it runs), the answer
// classified by the endpoint's policy and recorded (again in the
// background when the store did not take it), and the unknown outcomes
// resolved through the endpoint's resolve path.
//
// The stage holds only what it uses: the claims part of the (decorated)
// store, the (decorated) executor, the clock, what prepares an answer for
// storage (the replay stage's Stored), the execution-time estimates behind
// Retry-After, and where its results are counted and its background work
// is owned. It answers through the shared exchange.Request.
package upstream

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// storeCallTimeout bounds one store call (exchange.StoreCallTimeout).
var storeCallTimeout = exchange.StoreCallTimeout

// Storer prepares an answer for storage (the replay stage's Stored: kept
// fields, sealed secrets).
type Storer interface {
	Stored(c *exchange.Request, s store.Snapshot, body []byte, state idempotency.State) store.Snapshot
}

// Background owns work that outlives a request's answer: Go runs f in a
// goroutine the owner waits for on Close, and reports false (without
// running f) once Close has begun.
type Background interface {
	Go(f func()) bool
}

// Config is what the upstream stage is built from.
type Config struct {
	// Claims is the (decorated) store's claims: heartbeats, stages,
	// finishes, releases, resolves and lookups through a lease.
	Claims store.Claims
	// Executor is the (decorated) executor.
	Executor Executor
	// Stored prepares an answer for storage.
	Stored Storer
	// Clock drives the lease check, the heartbeat, the background
	// recording's backoff and the execution-time estimates.
	Clock clock.Clock
	// Logger receives the stage's logs (never a key's text, a body or a
	// secret).
	Logger *slog.Logger
	// Results counts an upstream result of an endpoint by state.
	Results func(ctx context.Context, endpoint, state string)
	// Recorded is told of every operation this instance recorded
	// something for (the retries waiting on it read the record now).
	Recorded func(id uuid.UUID)
	// Background owns the results recorded again after a store error.
	Background Background
	// Endpoints are the coordinated endpoints (one execution-time
	// estimate each).
	Endpoints []config.Endpoint
	// HandOff, if set, passes a run whose result the fence refused (the
	// shard moved during it) to the shard's new owner and reports whether
	// the client was answered (routing.Stage.HandOff); when it is not,
	// the client is told to retry with the same key.
	HandOff func(ctx context.Context, c *exchange.Request) bool
}

// Stage runs intents upstream.
type Stage struct {
	claims   store.Claims
	next     Executor
	stored   Storer
	clock    clock.Clock
	log      *slog.Logger
	results  func(ctx context.Context, endpoint, state string)
	recorded func(id uuid.UUID)
	handOff  func(ctx context.Context, c *exchange.Request) bool
	bg       Background
	// durations estimates each endpoint's execution time (Retry-After).
	durations map[string]*durationEstimate
}

// New returns the upstream stage.
func New(cfg Config) *Stage {
	s := &Stage{claims: cfg.Claims, next: cfg.Executor, stored: cfg.Stored, clock: clock.Or(cfg.Clock), log: cfg.Logger,
		results: cfg.Results, recorded: cfg.Recorded, handOff: cfg.HandOff, bg: cfg.Background, durations: map[string]*durationEstimate{}}
	for _, ep := range cfg.Endpoints {
		s.durations[ep.Name] = &durationEstimate{}
	}
	return s
}

// RetryAfter is the wait to suggest to a retry that found an operation of
// endpoint in flight, with leaseLeft the lease the run had left (<= 0:
// unknown): see durationEstimate.retryAfter.
func (s *Stage) RetryAfter(endpoint string, leaseLeft time.Duration) time.Duration {
	return s.durations[endpoint].retryAfter(leaseLeft)
}
