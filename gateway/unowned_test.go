package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/sqlstore"
)

// TestUnownedShardIsServedByNoRegion: on a store nobody bootstrapped, no
// shard has an owner, so no region runs anything: 503, nothing executed.
// (A gateway's Start refuses such a store, TestAGatewayOnAStoreWithoutFencesRefusesToStart;
// this one serves without Start.)
func TestUnownedShardIsServedByNoRegion(t *testing.T) {
	s, err := sqlstore.Open(context.Background(), sqlstore.Config{Migrate: true, DSN: pgtest.NewDatabase(t), MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	var runs atomic.Int64
	g, err := gateway.Wrap(gateway.Config{Region: "test", Worker: "w", Store: s, Auth: verifier(t),
		Endpoints: endpoints(t, "")}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{}`)
	}))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(func() { g.Close() })
	t.Cleanup(srv.Close)
	st, hd, b := do(t, post(t, srv.URL+"/v1/things", token(t, "alice"), "unowned", `{}`))
	if st != http.StatusServiceUnavailable || runs.Load() != 0 {
		t.Fatalf("request on an unowned shard: %s, upstream runs %d; want 503 and none", describe(st, hd, b), runs.Load())
	}
}
