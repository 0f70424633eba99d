package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/testutil"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// reviewEndpoints parses one endpoint "create-thing" (POST /v1/things, key
// required) with the extra fields given (each line indented by 4 spaces),
// so a test can choose lease and upstream_timeout together.
func reviewEndpoints(t testing.TB, extra string) []config.Endpoint {
	t.Helper()
	return endpoints(t, extra)
}

// reviewScope is the store scope the gateway uses for actor t/<subject>.
func reviewScope(t testing.TB, subject, key string) store.Scope {
	t.Helper()
	k, err := idempotency.ParseKeyHeader(key)
	if err != nil {
		t.Fatal(err)
	}
	return store.Scope{Actor: "t/" + subject, Endpoint: "create-thing", Key: k}
}

// do sends req and returns status, headers and body.
func do(t testing.TB, req *http.Request) (int, http.Header, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// waitState polls the store until the record reaches want or d passes, and
// returns the last state seen.
func waitState(t testing.TB, s *sqlstore.Store, sc store.Scope, want idempotency.State, d time.Duration) idempotency.State {
	t.Helper()
	var last idempotency.State
	testutil.Poll(d, func() error {
		rec, err := s.Read(context.Background(), sc)
		switch {
		case err != nil:
			last = idempotency.State("read error: " + err.Error())
			return err
		case rec.State != want:
			last = rec.State
			return errors.New("not yet")
		}
		last = rec.State
		return nil
	})
	return last
}

// failFinish is the real store, except that its first n Finish calls fail
// as if the worker died (or the store blipped) right after the execution.
type failFinish struct {
	*sqlstore.Store
	n atomic.Int64
}

func (f *failFinish) Finish(ctx context.Context, l *store.Lease, res store.Result) error {
	if f.n.Add(-1) >= 0 {
		return errors.New("injected: worker died before recording the result")
	}
	return f.Store.Finish(ctx, l, res)
}

// staleForever is the real store whose claims are always refused by the
// fence, as during a burst of epoch changes.
type staleForever struct{ *sqlstore.Store }

func (s staleForever) Begin(ctx context.Context, req store.ClaimRequest) (store.Claim, error) {
	return store.Claim{}, &fencing.StaleEpochError{Token: req.Token, Current: req.Token.Epoch + 1}
}

// resolutionBody is a resolve endpoint's 200 answer.
func resolutionBody(status int, body string) string {
	b, _ := json.Marshal(map[string]any{"status": status, "headers": map[string][]string{"Content-Type": {"application/json"}},
		"body": json.RawMessage(body)})
	return string(b)
}

func describe(status int, h http.Header, body string) string {
	return fmt.Sprintf("%d replayed=%q %s", status, h.Get("Idempotent-Replayed"), body)
}

// startGateway starts g's background loops (async recovery, move sweep) until
// g.Close, and returns g.
func startGateway(tb testing.TB, g *gateway.Gateway) *gateway.Gateway {
	tb.Helper()
	if err := g.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return g
}

// served fails the test on err (New's or Wrap's), starts g and serves it
// over HTTP; the server and then g are closed when the test ends.
func served(tb testing.TB, g *gateway.Gateway, err error) *httptest.Server {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
	startGateway(tb, g)
	tb.Cleanup(func() { g.Close() })
	srv := httptest.NewServer(g)
	tb.Cleanup(srv.Close)
	return srv
}
