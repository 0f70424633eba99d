package bank

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// schema is portable SQL (PostgreSQL and CockroachDB): ids are UUIDs made in
// Go, amounts are decimals, and operation_id is deliberately not unique.
const schema = `
CREATE TABLE IF NOT EXISTS bank_charges (
    charge_id    UUID        NOT NULL PRIMARY KEY,
    operation_id TEXT        NOT NULL,
    actor        TEXT        NOT NULL,
    amount       NUMERIC     NOT NULL CHECK (amount > 0),
    currency     TEXT        NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS bank_charges_operation_idx ON bank_charges (operation_id);
`

// Migrate creates the bank's table if it does not exist. It is idempotent
// and safe to run from several instances at once.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	var err error
	// Concurrent CREATE ... IF NOT EXISTS can still collide on the catalog
	// on PostgreSQL; a re-run settles it.
	for attempt := 0; attempt < 4; attempt++ {
		if _, err = pool.Exec(ctx, schema); err == nil {
			return nil
		}
	}
	return fmt.Errorf("bank: migrate: %w", err)
}

// Options configures a Server. The zero value is valid.
type Options struct {
	// Logger receives one line per charge and per fault change; bodies are
	// never logged. Default: slog.Default().
	Logger *slog.Logger
	// Now stamps created_at. Default: time.Now.
	Now func() time.Time
}

// Server is the bank's http.Handler. Its fault knobs may be changed at any
// time, from Go (SetFaults) or over HTTP (PUT /faults).
type Server struct {
	pool *pgxpool.Pool
	log  *slog.Logger
	now  func() time.Time
	mux  *http.ServeMux

	mu       sync.Mutex
	faults   Faults // FailNext counts down as failures are served
	failLeft int
}

var _ http.Handler = (*Server)(nil)

// New returns a bank over pool, whose tables Migrate created, with no
// faults set.
func New(pool *pgxpool.Pool, opts Options) *Server {
	s := &Server{pool: pool, log: opts.Logger, now: opts.Now, mux: http.NewServeMux()}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.mux.HandleFunc("POST /charges", s.createCharge)
	s.mux.HandleFunc("GET /charges", s.listCharges)
	s.mux.HandleFunc("GET /faults", s.getFaults)
	s.mux.HandleFunc("PUT /faults", s.putFaults)
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Count returns how many charges the bank recorded for operationID; more
// than one is a double charge.
func (s *Server) Count(ctx context.Context, operationID string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM bank_charges WHERE operation_id = $1`, operationID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("bank: count: %w", err)
	}
	return n, nil
}

// Total returns how many charges the bank recorded, for every operation.
func (s *Server) Total(ctx context.Context) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM bank_charges`).Scan(&n); err != nil {
		return 0, fmt.Errorf("bank: total: %w", err)
	}
	return n, nil
}

// sleep waits d or until ctx ends, and reports whether the full d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
