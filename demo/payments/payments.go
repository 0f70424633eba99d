package payments

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcoord/idemcoord/clock"
)

// DefaultBankTimeout bounds one call to the bank. Past it the payment's
// outcome is unknown (504); 10s is long enough for a healthy bank under
// load and short enough to stay inside the gateway's lease.
const DefaultBankTimeout = 10 * time.Second

// Payment statuses.
const (
	// StatusPending: inserted; the bank call is in flight or its outcome is
	// unknown.
	StatusPending = "pending"
	// StatusSucceeded: the bank recorded the charge.
	StatusSucceeded = "succeeded"
	// StatusFailed: the bank provably did not record the charge when it was
	// asked (it answered an error, or the request never left).
	StatusFailed = "failed"
)

// ErrNotFound is returned by Find when no payment has the operation id.
var ErrNotFound = errors.New("payments: not found")

// schema is portable SQL (PostgreSQL and CockroachDB). The UNIQUE
// constraint on operation_id is what stops a second execution of one
// operation from charging twice.
const schema = `
CREATE TABLE IF NOT EXISTS payments (
    payment_id   UUID          NOT NULL PRIMARY KEY,
    operation_id UUID          NOT NULL,
    actor        TEXT          NOT NULL,
    amount       NUMERIC(18,2) NOT NULL CHECK (amount > 0),
    currency     TEXT          NOT NULL,
    reference    TEXT          NOT NULL,
    status       TEXT          NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
    charge_id    UUID,
    attempts     INT4          NOT NULL,
    created_at   TIMESTAMPTZ   NOT NULL,
    updated_at   TIMESTAMPTZ   NOT NULL,
    CONSTRAINT payments_operation_id_key UNIQUE (operation_id)
);
CREATE INDEX IF NOT EXISTS payments_actor_created_idx ON payments (actor, created_at DESC, payment_id DESC);
`

// Migrate creates the payments table if it does not exist. It is idempotent
// and safe to run from several instances at once.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	var err error
	// Concurrent CREATE ... IF NOT EXISTS can still collide on the catalog
	// on PostgreSQL; a re-run settles it.
	for attempt := 0; attempt < 4; attempt++ {
		if _, err = pool.Exec(ctx, schema+stagesSchema); err == nil {
			return nil
		}
	}
	return fmt.Errorf("payments: migrate: %w", err)
}

// Payment is one row of the payments table.
type Payment struct {
	// ID is the payment id, a UUIDv7 (time-ordered).
	ID uuid.UUID
	// OperationID is the gateway's operation id; unique.
	OperationID uuid.UUID
	// Actor is the actor scope that created the payment.
	Actor string
	// Amount is a decimal string with two fraction digits, e.g. "12.50".
	Amount string
	// Currency is an ISO 4217 code.
	Currency string
	// Reference is the caller's reference, 1..128 characters.
	Reference string
	// Status is StatusPending, StatusSucceeded or StatusFailed.
	Status string
	// ChargeID is the bank's charge id, when known.
	ChargeID uuid.NullUUID
	// Attempts counts bank charge attempts (a failed payment retried by a
	// second execution has 2).
	Attempts int
	// CreatedAt and UpdatedAt are set from Options.Now.
	CreatedAt, UpdatedAt time.Time
}

// Options configures a Server. The zero value is valid.
type Options struct {
	// BankTimeout bounds each call to the bank, connection included.
	// Default DefaultBankTimeout. Shorter makes unknown outcomes (504,
	// pending rows) more frequent; longer holds the caller longer.
	BankTimeout time.Duration
	// Logger receives one line per outcome; bodies are never logged.
	// Default slog.Default().
	Logger *slog.Logger
	// Now stamps created_at and updated_at. Default time.Now.
	Now func() time.Time
	// Hold is how long POST /v1/held-payments keeps a payment reserved
	// (cancellable) before it captures. Default DefaultHold.
	Hold time.Duration
	// Clock times the hold. Default clock.Real(); tests pass a
	// *clock.Fake and advance it.
	Clock clock.Clock
}

// Server is the payments http.Handler.
type Server struct {
	pool    *pgxpool.Pool
	bank    *bankClient
	log     *slog.Logger
	now     func() time.Time
	timeout time.Duration
	hold    time.Duration
	clock   clock.Clock
	mux     *http.ServeMux
	// holds maps an operation held in this process to the function that
	// ends its hold early (a cancel won it).
	holds sync.Map
	// bg counts the background releases (release.go); closing ends them
	// (Close).
	bg          sync.WaitGroup
	closing     context.Context
	stopClosing context.CancelFunc
}

var _ http.Handler = (*Server)(nil)

// New returns the payments service over pool, whose tables Migrate created,
// charging the bank at bankURL (e.g. "http://127.0.0.1:8081"). It panics if
// bankURL is not an absolute http or https URL: that is a wiring mistake,
// best found at startup rather than classified as a bank failure later.
func New(pool *pgxpool.Pool, bankURL string, opts Options) *Server {
	u, err := url.Parse(bankURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		panic(fmt.Sprintf("payments: bank URL %q is not an absolute http(s) URL", bankURL))
	}
	s := &Server{pool: pool, log: opts.Logger, now: opts.Now, timeout: opts.BankTimeout, hold: opts.Hold,
		clock: clock.Or(opts.Clock), mux: http.NewServeMux()}
	s.closing, s.stopClosing = context.WithCancel(context.Background())
	if s.hold <= 0 {
		s.hold = DefaultHold
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.timeout <= 0 {
		s.timeout = DefaultBankTimeout
	}
	s.bank = newBankClient(strings.TrimRight(bankURL, "/"), s.timeout)
	s.mux.HandleFunc("POST /v1/payments", s.create)
	// A transfer is the same charge under its own route, so that a
	// gateway can give it another endpoint policy (the dev cluster's
	// create-transfer is failover: transfer, create-payment reject).
	s.mux.HandleFunc("POST /v1/transfers", s.create)
	s.mux.HandleFunc("POST /v1/held-payments", func(w http.ResponseWriter, r *http.Request) { s.createHeld(w, r, s.hold, true) })
	s.mux.HandleFunc("POST /internal/operations/{operation_id}/cancel", s.cancel)
	s.mux.HandleFunc("GET /v1/payments", s.list)
	s.mux.HandleFunc("GET /v1/payments/{id}", s.get)
	s.mux.HandleFunc("GET /internal/operations/{operation_id}", s.resolve)
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Count returns the number of payment rows for operationID: 0 or 1, since
// operation_id is unique. Drills compare it with the bank's count.
func Count(ctx context.Context, pool *pgxpool.Pool, operationID string) (int, error) {
	op, err := uuid.Parse(operationID)
	if err != nil {
		return 0, fmt.Errorf("payments: operation id: %w", err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE operation_id = $1`, op).Scan(&n); err != nil {
		return 0, fmt.Errorf("payments: count: %w", err)
	}
	return n, nil
}

// Find returns the payment for operationID, or ErrNotFound.
func Find(ctx context.Context, pool *pgxpool.Pool, operationID string) (Payment, error) {
	op, err := uuid.Parse(operationID)
	if err != nil {
		return Payment{}, fmt.Errorf("payments: operation id: %w", err)
	}
	return find(ctx, pool, op)
}

const columns = `payment_id, operation_id, actor, amount::TEXT, currency, reference, status, charge_id,
	attempts, created_at, updated_at`

func scan(row pgx.Row) (Payment, error) {
	var p Payment
	err := row.Scan(&p.ID, &p.OperationID, &p.Actor, &p.Amount, &p.Currency, &p.Reference, &p.Status,
		&p.ChargeID, &p.Attempts, &p.CreatedAt, &p.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Payment{}, ErrNotFound
	}
	return p, err
}

func find(ctx context.Context, pool *pgxpool.Pool, op uuid.UUID) (Payment, error) {
	return scan(pool.QueryRow(ctx, `SELECT `+columns+` FROM payments WHERE operation_id = $1`, op))
}
