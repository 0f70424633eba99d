package payments_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcoord/idemcoord/demo/bank"
	"github.com/idemcoord/idemcoord/demo/payments"
	"github.com/idemcoord/idemcoord/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// env is a bank and a payments service on one fresh database, each behind
// an httptest server. Servers close (waiting for their handlers) before the
// pool when the test ends.
type env struct {
	pool   *pgxpool.Pool
	bank   *bank.Server
	bankTS *httptest.Server
	payTS  *httptest.Server
}

func newEnv(t *testing.T, opts payments.Options) *env {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t, 24)
	if err := bank.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	for range 2 { // Migrate is idempotent
		if err := payments.Migrate(ctx, pool); err != nil {
			t.Fatal(err)
		}
	}
	e := &env{pool: pool, bank: bank.New(pool, bank.Options{})}
	e.bankTS = httptest.NewServer(e.bank)
	t.Cleanup(e.bankTS.Close)
	e.payTS = httptest.NewServer(payments.New(pool, e.bankTS.URL, opts))
	t.Cleanup(e.payTS.Close)
	return e
}

// answer is one HTTP answer.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// send makes a request as the gateway would, with the operation id and
// actor headers when non-empty.
func send(t *testing.T, c *http.Client, method, url, op, actor string, body any) answer {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = bytes.NewReader([]byte(b))
	default:
		j, _ := json.Marshal(b)
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if op != "" {
		req.Header.Set(payments.HeaderOperationID, op)
	}
	if actor != "" {
		req.Header.Set(payments.HeaderActor, actor)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, b}
}

// pay posts a payment for op as alice.
func (e *env) pay(t *testing.T, op string, body any) answer {
	t.Helper()
	return send(t, e.payTS.Client(), "POST", e.payTS.URL+"/v1/payments", op, "default/alice", body)
}

// resolve asks about op as the gateway does for alice's operations.
func (e *env) resolve(t *testing.T, op string) answer {
	t.Helper()
	return e.resolveAs(t, op, "default/alice")
}

func (e *env) resolveAs(t *testing.T, op, actor string) answer {
	t.Helper()
	return send(t, e.payTS.Client(), "GET", e.payTS.URL+"/internal/operations/"+op, "", actor, nil)
}

func order(ref string) map[string]string {
	return map[string]string{"amount": "12.5", "currency": "EUR", "reference": ref}
}

func newOp() string { return uuid.NewString() }

func receiptOf(t *testing.T, a answer) payments.Receipt {
	t.Helper()
	var r payments.Receipt
	if err := json.Unmarshal(a.body, &r); err != nil {
		t.Fatalf("receipt %s: %v", a.body, err)
	}
	return r
}

// charges is the bank's count for op.
func (e *env) charges(t *testing.T, op string) int {
	t.Helper()
	n, err := e.bank.Count(context.Background(), op)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// rows is the payments count for op.
func (e *env) rows(t *testing.T, op string) int {
	t.Helper()
	n, err := payments.Count(context.Background(), e.pool, op)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (e *env) find(t *testing.T, op string) payments.Payment {
	t.Helper()
	p, err := payments.Find(context.Background(), e.pool, op)
	if err != nil {
		t.Fatalf("Find(%s): %v", op, err)
	}
	return p
}

// serve starts h behind an httptest server and returns its URL.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}
