package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/demo/bank"
	"github.com/idemcoord/idemcoord/demo/payments"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/internal/testutil"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// cancelHold is how long the demo holds a payment reserved; only the
// fake clock moves it.
const cancelHold = time.Minute

// cancelEnv is the gateway in front of the demo payments service (held
// payments: reserved, reversible, then captured, irreversible) and its
// bank, each over real HTTP, the gateway's store and the demo's tables on
// real PostgreSQL. hold is the demo's clock: a payment stays reserved
// until the test advances it.
type cancelEnv struct {
	t     *testing.T
	g     *gateway.Gateway
	srv   *httptest.Server
	store *sqlstore.Store
	pool  *pgxpool.Pool
	bank  *bank.Server
	hold  *clock.Fake
	// leases is the store's clock: leases expire only when it moves.
	leases *clock.Fake
	// bankGate, when set before a charge, holds every charge until closed.
	bankGate atomic.Pointer[chan struct{}]
	// upstreamCancels counts the cancels the gateway sent the demo.
	upstreamCancels atomic.Int64
	// upstreamURL is the demo payments service's base URL.
	upstreamURL string
	// endpoint is the gateway's one endpoint, as configured.
	endpoint config.Endpoint
	// logs holds everything the gateway logged.
	logs *lockedBuffer
}

const cancelEndpoint = `
  - name: create-payment
    method: POST
    path: /v1/held-payments
    key: required
    async: true
    upstream_timeout: 20s
    lease: 60s
    retry_statuses: [408, 425, 429, 500, 502-504]
    response_headers: [Content-Type, Location]
    resolve_path: /internal/operations/{operation_id}
    cancel_path: /internal/operations/{operation_id}/cancel
`

func newCancelEnv(t *testing.T) *cancelEnv {
	t.Helper()
	ctx := context.Background()
	e := &cancelEnv{t: t, pool: pgtest.NewPool(t, 24), hold: clock.NewFake(time.Unix(1_700_000_000, 0)),
		leases: clock.NewFake(time.Now())}
	var err error
	e.store, err = sqlstore.Open(ctx, sqlstore.Config{Migrate: true, DSN: pgtest.NewDatabase(t), MaxConns: 16, DBClock: e.leases})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.store.Close)
	bootstrap(t, e.store)
	if err := errors.Join(bank.Migrate(ctx, e.pool), payments.Migrate(ctx, e.pool)); err != nil {
		t.Fatal(err)
	}
	e.bank = bank.New(e.pool, bank.Options{})
	bankTS := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if gate := e.bankGate.Load(); gate != nil && r.Method == http.MethodPost {
			<-*gate
		}
		e.bank.ServeHTTP(w, r)
	}))
	t.Cleanup(bankTS.Close)
	pay := payments.New(e.pool, bankTS.URL, payments.Options{Hold: cancelHold, Clock: e.hold})
	payTS := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && len(r.URL.Path) > 7 && r.URL.Path[len(r.URL.Path)-7:] == "/cancel" {
			e.upstreamCancels.Add(1)
		}
		pay.ServeHTTP(w, r)
	}))
	t.Cleanup(payTS.Close)
	e.upstreamURL = payTS.URL
	// A failing test must not leave a held payment or a charge blocked.
	t.Cleanup(func() {
		e.hold.Advance(24 * time.Hour)
		if gate := e.bankGate.Swap(nil); gate != nil {
			select {
			case <-*gate:
			default:
				close(*gate)
			}
		}
	})
	os.Setenv("GATEWAY_TEST_SECRET", string(secret))
	cfg, err := config.Parse([]byte(`region: test
listen: 127.0.0.1:0
upstream: ` + payTS.URL + `
store: {dsn: "postgres://x"}
auth: {issuer: test, audience: idemcoord, hs256_secret_env: GATEWAY_TEST_SECRET}
endpoints:` + cancelEndpoint))
	if err != nil {
		t.Fatal(err)
	}
	e.endpoint = cfg.Endpoints[0]
	e.logs = &lockedBuffer{}
	u, _ := url.Parse(payTS.URL)
	e.g, err = gateway.New(gateway.Config{Region: "test", Worker: "w", Store: e.store, Auth: verifier(t),
		Endpoints: cfg.Endpoints, Next: gateway.NewProxy(u, nil), Recovery: gateway.RecoveryConfig{Disabled: true},
		Logger: slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	startGateway(t, e.g)
	t.Cleanup(func() { e.g.Close() })
	e.srv = httptest.NewServer(e.g)
	t.Cleanup(e.srv.Close)
	return e
}

// reply is one answer of the gateway.
type reply struct {
	status int
	header http.Header
	body   map[string]any
}

func (e *cancelEnv) do(req *http.Request) reply {
	e.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header}
	if len(b) > 0 {
		if err := json.Unmarshal(b, &r.body); err != nil {
			e.t.Fatalf("answer %d %q: %v", resp.StatusCode, b, err)
		}
	}
	return r
}

// pay posts a held payment as subject with key.
func (e *cancelEnv) pay(subject, key, ref string) reply {
	e.t.Helper()
	return e.do(post(e.t, e.srv.URL+"/v1/held-payments", token(e.t, subject), key,
		`{"amount":"12.50","currency":"EUR","reference":"`+ref+`"}`))
}

// accepted posts a held payment and returns its operation id (202).
func (e *cancelEnv) accepted(subject, key, ref string) string {
	e.t.Helper()
	r := e.pay(subject, key, ref)
	if r.status != http.StatusAccepted {
		e.t.Fatalf("POST: status %d %v, want 202", r.status, r.body)
	}
	return r.header.Get(gateway.HeaderOperationID)
}

func (e *cancelEnv) operation(method, subject, op string) reply {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+"/v1/operations/"+op, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", token(e.t, subject))
	return e.do(req)
}

// cancel is DELETE /v1/operations/{op} as subject.
func (e *cancelEnv) cancel(subject, op string) reply {
	return e.operation(http.MethodDelete, subject, op)
}

// status is GET /v1/operations/{op} as subject.
func (e *cancelEnv) status(subject, op string) reply { return e.operation(http.MethodGet, subject, op) }

// effects returns the bank's charges and the demo's payment rows for op.
func (e *cancelEnv) effects(op string) (charges, rows int) {
	e.t.Helper()
	ctx := context.Background()
	charges, err := e.bank.Count(ctx, op)
	if err == nil {
		rows, err = payments.Count(ctx, e.pool, op)
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return charges, rows
}

// record reads op's record as subject.
func (e *cancelEnv) record(subject, op string) store.Record {
	e.t.Helper()
	rec, err := e.store.Lookup(context.Background(), "t/"+subject, uuid.MustParse(op))
	if err != nil {
		e.t.Fatalf("Lookup %s: %v", op, err)
	}
	return rec
}

// waitRecord waits, on the store's own answers, until op's record
// satisfies ok (a background worker writes it); no timing is asserted.
func (e *cancelEnv) waitRecord(subject, op string, ok func(store.Record) bool) store.Record {
	e.t.Helper()
	var rec store.Record
	testutil.Eventually(e.t, 20*time.Second, func() error {
		if rec = e.record(subject, op); !ok(rec) {
			return fmt.Errorf("record %s stayed %s at stage %q", op, rec.State, rec.LastStage)
		}
		return nil
	})
	return rec
}
