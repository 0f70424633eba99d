package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/internal/retry"
	"github.com/idemcoord/idemcoord/store"
)

// Defaults for Config.
const (
	// DefaultMaxConns is the pool size. pgxpool's own default is
	// max(4, NumCPU), which starves a gateway on a small machine: every
	// request holds a connection for one or two short statements.
	DefaultMaxConns = 32
)

// Retry defaults: the store's budget is retry.Default.Store, named there.
var (
	// DefaultMaxAttempts bounds the attempts of one store call.
	DefaultMaxAttempts = retry.Default.Store.Attempts
	// DefaultRetryBase is the first backoff step; jitter spreads racers.
	DefaultRetryBase = retry.Default.Store.Base
)

// Config configures a Store.
type Config struct {
	// DSN is the store's connection string (postgres:// URL or key=value).
	DSN string
	// Migrate applies the portable migrations when the store opens (idemctl
	// migrate, idemd run --migrate, the dev cluster, tests). Default false:
	// Open then checks that the schema is there and fails with
	// ErrSchemaMissing otherwise, so no instance changes the schema behind
	// an operator's back.
	Migrate bool
	// MaxConns is the connection pool size. Default DefaultMaxConns.
	MaxConns int32
	// MaxAttempts bounds the attempts of one store call: whole-transaction
	// retries on serialization failures, re-runs that settle an ambiguous
	// commit and claim rounds, together. Default DefaultMaxAttempts.
	MaxAttempts int
	// RetryBase is the first retry backoff; the step doubles up to 64 times
	// RetryBase (retry.Default.Store's Cap over its Base). Default
	// DefaultRetryBase.
	RetryBase time.Duration
	// DBClock, when set, stands in for the database's clock: its Now
	// replaces the database's now() for leases and TTLs, and tests move it
	// instead of sleeping. Default nil: the database's own now(), which
	// every instance shares. It does not drive retry backoff.
	DBClock clock.Clock
	// BackoffClock is what retry backoff sleeps on. Default clock.Real().
	// It is separate from DBClock so a test that holds lease time still
	// (or moves it by hours) neither freezes nor skips the store's retries.
	BackoffClock clock.Clock
	// Seed seeds retry jitter; 0 picks one at random.
	Seed uint64
	// Meter records the store's counters. Default: the global provider's.
	Meter metric.Meter
	// Logger receives the store's logs. Default slog.Default().
	Logger *slog.Logger
	// Tracer, if set, sees every query the pool runs (tests count the
	// store round trips of each request path with it). Default none.
	Tracer pgx.QueryTracer
	// GroupCommit combines the claims (and separately the finishes) that
	// arrive while GroupCommit.MaxInFlight statements of their kind run
	// into one statement each (group commit; see GroupCommit). Default
	// (the zero value) DefaultGroupCommit, the production setting;
	// GroupCommitOff turns it off.
	GroupCommit GroupCommit
}

// DefaultConfig returns a Config with every default set; DSN is left to
// set. Open gives a zero field the same default, so a Config that sets
// only DSN (and Migrate) runs with the production defaults too.
func DefaultConfig() Config {
	return Config{MaxConns: DefaultMaxConns, MaxAttempts: DefaultMaxAttempts, RetryBase: DefaultRetryBase,
		BackoffClock: clock.Real(), Logger: slog.Default(), GroupCommit: DefaultGroupCommit}
}

// Validate reports every invalid field, naming it and saying why.
func (c Config) Validate() error {
	var errs []error
	if strings.TrimSpace(c.DSN) == "" {
		errs = append(errs, errors.New("dsn: must be set"))
	}
	if c.MaxConns < 0 {
		errs = append(errs, fmt.Errorf("max_conns: must not be negative, got %d", c.MaxConns))
	}
	if c.MaxAttempts < 0 {
		errs = append(errs, fmt.Errorf("max_attempts: must not be negative, got %d", c.MaxAttempts))
	}
	errs = append(errs, c.GroupCommit.validate()...)
	return errors.Join(errs...)
}

// Store implements every capability of the store contract (checked at
// compile time: a missing capability does not build).
var _ store.Backend = (*Store)(nil)

// Store is the SQL store. It is safe for concurrent use.
type Store struct {
	cfg       Config
	pool      *pgxpool.Pool
	cockroach bool
	metrics   *metrics
	window    metric.Int64Counter // idemcoord.downstream_window_passed (window.go)
	log       *slog.Logger

	randMu sync.Mutex
	rand   *rand.Rand
	loop   retry.Loop

	retries retryRate

	// The group commit of claims and of finishes; nil when off.
	claims   *combiner[claimJob]
	finishes *combiner[finishJob]

	// The claims whose commit could not be confirmed, released in the
	// background once the store answers (release.go).
	releases releaser
}

// Open connects, detects CockroachDB, and applies the portable migrations.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sqlstore: config: %w", err)
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.RetryBase == 0 {
		cfg.RetryBase = DefaultRetryBase
	}
	if cfg.GroupCommit == (GroupCommit{}) {
		cfg.GroupCommit = DefaultGroupCommit
	}
	cfg.BackoffClock = clock.Or(cfg.BackoffClock)
	if cfg.Meter == nil {
		cfg.Meter = otel.GetMeterProvider().Meter("github.com/idemcoord/idemcoord/sqlstore")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	pc, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: dsn: %w", err)
	}
	pc.MaxConns = cfg.MaxConns
	// A commit the synchronous standby did not confirm is not a success,
	// and a server that no longer takes writes is left (primary.go,
	// syncrep.go).
	pc.ConnConfig.Tracer = commitTracer{next: cfg.Tracer}
	pc.ConnConfig.OnNotice = onNotice
	pc.ConnConfig.OnPgError = onPgError
	// Every implicit (single-statement) transaction is serializable too.
	pc.ConnConfig.RuntimeParams["default_transaction_isolation"] = "serializable"
	pc.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		registerBatchArrays(c.TypeMap())
		var v string
		if err := c.QueryRow(ctx, "SELECT version()").Scan(&v); err != nil {
			return err
		}
		if strings.Contains(v, "CockroachDB") {
			// The fence must be a lock, not a plain read: CockroachDB takes
			// FOR SHARE locks under SERIALIZABLE only with these on. Refuse
			// to run without them.
			_, err := c.Exec(ctx, "SET enable_shared_locking_for_serializable = true; "+
				"SET enable_durable_locking_for_serializable = true")
			if err != nil {
				return fmt.Errorf("sqlstore: CockroachDB must support shared, durable FOR SHARE locks (v23.2+): %w", err)
			}
			return nil
		}
		// PostgreSQL re-plans a prepared statement with custom plans until
		// it trusts the generic one; the claim and update statements are
		// CTEs whose planning costs more than their execution, and their
		// plan never depends on the values (primary key lookups).
		_, err := c.Exec(ctx, "SET plan_cache_mode = force_generic_plan")
		return err
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: connect: %w", err)
	}
	m, err := newMetrics(cfg.Meter)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s := &Store{cfg: cfg, pool: pool, metrics: m, log: cfg.Logger, rand: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	s.releases.stop = make(chan struct{})
	if s.releases.counter, err = newReleaseCounter(cfg.Meter); err != nil {
		pool.Close()
		return nil, err
	}
	if s.window, err = newWindowCounter(cfg.Meter); err != nil {
		pool.Close()
		return nil, err
	}
	var version string
	if err := pool.QueryRow(ctx, "SELECT version()").Scan(&version); err != nil {
		pool.Close()
		return nil, fmt.Errorf("sqlstore: connect: %w", err)
	}
	s.cockroach = strings.Contains(version, "CockroachDB")
	s.loop = retry.Loop{Budget: budget(cfg), Clock: cfg.BackoffClock, Jitter: s.jitter, OnRetry: s.metrics.txRetry, Outage: outage}
	s.claims = newCombiner(cfg.GroupCommit, s.claimBatch)
	s.finishes = newCombiner(cfg.GroupCommit, s.finishBatch)
	if cfg.Migrate {
		err = Migrate(ctx, pool)
	} else {
		err = checkSchema(ctx, pool)
	}
	if err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// budget is retry.Default.Store with cfg's attempts and backoff base.
func budget(cfg Config) retry.Budget {
	b := retry.Default.Store
	b.Cap = b.Cap / b.Base * cfg.RetryBase
	b.Attempts, b.Base = cfg.MaxAttempts, cfg.RetryBase
	return b
}

// jitter draws a backoff uniformly from [0, d].
func (s *Store) jitter(d time.Duration) time.Duration {
	s.randMu.Lock()
	defer s.randMu.Unlock()
	return time.Duration(s.rand.Int64N(int64(d) + 1))
}

// Pool returns the connection pool, for callers' own business writes.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Cockroach reports whether the store is CockroachDB.
func (s *Store) Cockroach() bool { return s.cockroach }

// DBSystem is the store's OpenTelemetry db.system.name: "cockroachdb" or
// "postgresql" (storeotel.Describer).
func (s *Store) DBSystem() string {
	if s.cockroach {
		return "cockroachdb"
	}
	return "postgresql"
}

// DBNamespace is the store's OpenTelemetry db.namespace: the database it
// connects to (storeotel.Describer).
func (s *Store) DBNamespace() string { return s.pool.Config().ConnConfig.Database }

// Ping checks that the store answers, within the store's per-call
// budget when ctx has no deadline.
func (s *Store) Ping(ctx context.Context) error {
	ctx, done := s.call(ctx)
	defer done()
	return s.pool.Ping(ctx)
}

// Close stops the background release of unconfirmed claims (release.go)
// and closes the pool.
func (s *Store) Close() {
	s.closeReleases()
	s.pool.Close()
}

// now returns the injected database clock's time, or nil for the
// database's now().
func (s *Store) now() *time.Time {
	if s.cfg.DBClock == nil {
		return nil
	}
	t := s.cfg.DBClock.Now()
	return &t
}
