package bank_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/idemcoord/idemcoord/demo/bank"
	"github.com/idemcoord/idemcoord/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// newBank starts a migrated bank on a fresh database behind an httptest
// server, closed (waiting for its handlers) when the test ends.
func newBank(t *testing.T) (*bank.Server, *httptest.Server) {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t, 8)
	if err := bank.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if err := bank.Migrate(ctx, pool); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	srv := bank.New(pool, bank.Options{})
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return srv, ts
}

// do sends a JSON request and returns the status and body. A transport
// error is returned, not fatal, so timeouts can be asserted.
func do(c *http.Client, method, url string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func charge(op string) bank.ChargeRequest {
	return bank.ChargeRequest{OperationID: op, Actor: "default/alice", Amount: "12.50", Currency: "EUR"}
}

func count(t *testing.T, srv *bank.Server, op string) int {
	t.Helper()
	n, err := srv.Count(context.Background(), op)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func total(t *testing.T, srv *bank.Server) int {
	t.Helper()
	n, err := srv.Total(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}
