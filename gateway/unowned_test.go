package gateway_test

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/sqlstore"
)

// TestUnownedShardIsServedByNoRegion: on a store nobody bootstrapped, no
// shard has an owner, so no region runs anything: 503, nothing executed.
func TestUnownedShardIsServedByNoRegion(t *testing.T) {
	s, err := sqlstore.Open(context.Background(), sqlstore.Config{Migrate: true, DSN: pgtest.NewDatabase(t), MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	var runs atomic.Int64
	srv := serveWrapped(t, s, "", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{}`)
	}))
	st, hd, b := do(t, post(t, srv.URL+"/v1/things", token(t, "alice"), "unowned", `{}`))
	if st != http.StatusServiceUnavailable || runs.Load() != 0 {
		t.Fatalf("request on an unowned shard: %s, upstream runs %d; want 503 and none", describe(st, hd, b), runs.Load())
	}
}
