package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// Context marks of the statements roundtrips counts: sent for a request
// the test made (inRequest), from within the store call it expects
// (inCall).
type inRequest struct{}
type inCall struct{}

// statements counts the statements the store sends for the test's
// requests, and those of them sent within the expected store calls.
type statements struct{ request, expected atomic.Int64 }

func (s *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	if ctx.Value(inRequest{}) != nil {
		s.request.Add(1)
		if ctx.Value(inCall{}) != nil {
			s.expected.Add(1)
		}
	}
	return ctx
}

func (s *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// callCounter is the real store, counting the claims and finishes it is
// asked for and marking their statements.
type callCounter struct {
	store.Store
	begins, finishes atomic.Int64
}

func (c *callCounter) Begin(ctx context.Context, req store.ClaimRequest) (store.Claim, error) {
	c.begins.Add(1)
	return c.Store.Begin(context.WithValue(ctx, inCall{}, true), req)
}

func (c *callCounter) Finish(ctx context.Context, l *store.Lease, res store.Result) error {
	c.finishes.Add(1)
	return c.Store.Finish(context.WithValue(ctx, inCall{}, true), l, res)
}

// TestAFirstRunCostsOneClaimAndOneFinishAndAReplayOneClaim: through the
// gateway, a first run on an endpoint with a resolve path asks the store
// for one claim and one finish and nothing else (no extra read, fence read
// or stage write: the shard's fence is cached after the actor's first
// request), and a replay for one claim. Whatever statements the store
// needs for those calls, the gateway adds none around them: the count the
// first-run benchmark's ratio rests on.
func TestAFirstRunCostsOneClaimAndOneFinishAndAReplayOneClaim(t *testing.T) {
	var sent statements
	s, err := sqlstore.Open(context.Background(), sqlstore.Config{Migrate: true, DSN: pgtest.NewDatabase(t), MaxConns: 4, Tracer: &sent})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	bootstrap(t, s)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"thing_id":"1"}`)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	calls := &callCounter{Store: s}
	g, err := gateway.New(gateway.Config{Region: "test", Worker: "w", Store: calls, Auth: verifier(t),
		Endpoints: endpoints(t, benchEndpoint), Next: gateway.NewProxy(u, nil)})
	if err != nil {
		t.Fatal(err)
	}
	startGateway(t, g)
	defer g.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), inRequest{}, true)))
	}))
	defer srv.Close()
	alice := token(t, "alice")
	if code, h, b := do(t, post(t, srv.URL+"/v1/things", alice, "warm-up", `{"n":0}`)); code != http.StatusCreated {
		t.Fatalf("warm-up (reads the shard's fence): %s", describe(code, h, b))
	}
	for _, tc := range []struct {
		name               string
		key                string
		begins, finishes   int64
		wantStatus         int
		wantReplayedHeader string
	}{
		{"first run", "counted-1", 1, 1, http.StatusCreated, ""},
		{"replay", "counted-1", 1, 0, http.StatusCreated, "true"},
	} {
		calls.begins.Store(0)
		calls.finishes.Store(0)
		sent.request.Store(0)
		sent.expected.Store(0)
		code, h, b := do(t, post(t, srv.URL+"/v1/things", alice, tc.key, `{"n":1}`))
		if code != tc.wantStatus || h.Get(gateway.HeaderReplayed) != tc.wantReplayedHeader {
			t.Fatalf("%s: %s", tc.name, describe(code, h, b))
		}
		if b, f := calls.begins.Load(), calls.finishes.Load(); b != tc.begins || f != tc.finishes {
			t.Errorf("%s: %d claims and %d finishes, want %d and %d", tc.name, b, f, tc.begins, tc.finishes)
		}
		if n, in := sent.request.Load(), sent.expected.Load(); n != in || n == 0 {
			t.Errorf("%s: %d statements for the request, %d of them in its claim and finish: the gateway sent %d more",
				tc.name, n, in, n-in)
		}
	}
}
