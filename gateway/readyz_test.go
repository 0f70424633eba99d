package gateway_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idemcoord/idemcoord/gateway"
)

// TestLosingAndRegainingReadinessIsLoggedOnceEachWithTheReason: a
// balancer takes an instance out on its failed /readyz checks and nobody
// reads the probe's body, so the gateway logs the reason when readiness
// is lost (once, however many checks fail) and logs when it is back.
func TestLosingAndRegainingReadinessIsLoggedOnceEachWithTheReason(t *testing.T) {
	s := openStore(t, 4)
	var down atomic.Bool
	logs := &lockedBuffer{}
	g, err := gateway.Wrap(gateway.Config{Region: "test", Worker: "w", Store: s, Auth: verifier(t),
		Endpoints: endpoints(t, ""), Logger: slog.New(slog.NewJSONHandler(logs, nil)),
		Ready: func(context.Context) error {
			if down.Load() {
				return errors.New("etcd liveness: lease lost")
			}
			return nil
		}}, http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	startGateway(t, g)
	t.Cleanup(func() { g.Close() })
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	probe := func(want int) {
		t.Helper()
		resp, err := http.Get(srv.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("/readyz = %d, want %d", resp.StatusCode, want)
		}
	}
	probe(http.StatusOK)
	down.Store(true)
	for range 4 {
		probe(http.StatusServiceUnavailable)
	}
	down.Store(false)
	probe(http.StatusOK)
	probe(http.StatusOK)

	out := logs.String()
	if n := strings.Count(out, `"msg":"not ready`); n != 1 || !strings.Contains(out, "etcd liveness: lease lost") {
		t.Errorf("%d not-ready lines, want 1 naming the reason:\n%s", n, out)
	}
	if n := strings.Count(out, `"msg":"ready again"`); n != 1 || !strings.Contains(out, `"not_ready_for"`) {
		t.Errorf("%d ready-again lines, want 1 with how long:\n%s", n, out)
	}
}
