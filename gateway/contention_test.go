package gateway_test

import (
	"context"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/internal/toxitest"
	"github.com/idemcoord/idemcoord/sqlstore"
)

// TestStoreContentionIs409AndOutageIs503: when the store gives up because
// the key is contended, the client is told the key is busy (409 with
// Retry-After, like an operation in progress); when the store is down, it
// is told so (503 with Retry-After). Neither runs the intent.
func TestStoreContentionIs409AndOutageIs503(t *testing.T) {
	var runs atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { runs.Add(1); w.WriteHeader(http.StatusCreated) })
	alice := token(t, "alice")

	t.Run("contention", func(t *testing.T) {
		s, err := sqlstore.Open(context.Background(), sqlstore.Config{Migrate: true, DSN: pgtest.NewDatabase(t), MaxAttempts: 3})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		bootstrap(t, s)
		// Every claim fails with a real serialization failure, as a hot key
		// under endless contention does.
		if _, err := s.Pool().Exec(context.Background(), `
			CREATE FUNCTION always_conflict() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN RAISE EXCEPTION 'injected conflict' USING ERRCODE = '40001'; END $$;
			CREATE TRIGGER always_conflict BEFORE INSERT ON idempotency_records
			FOR EACH ROW EXECUTE FUNCTION always_conflict();`); err != nil {
			t.Fatal(err)
		}
		srv := serveWrapped(t, s, "", h)
		code, hd, body := do(t, post(t, srv.URL+"/v1/things", alice, "hot-1", `{}`))
		if code != http.StatusConflict || hd.Get("Retry-After") == "" || problemType(t, body) != "in-progress" {
			t.Errorf("contended key: %d Retry-After %q %s; want 409 in-progress with Retry-After", code, hd.Get("Retry-After"), body)
		}
	})

	t.Run("outage", func(t *testing.T) {
		dsn := pgtest.NewDatabase(t)
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		p := toxitest.Proxy(t, "pg", u.Host)
		u.Host = p.Listen
		s, err := sqlstore.Open(context.Background(), sqlstore.Config{Migrate: true, DSN: u.String(), MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		bootstrap(t, s)
		srv := serveWrapped(t, s, "", h)
		p.Stop()
		s.Pool().Reset()
		code, hd, body := do(t, post(t, srv.URL+"/v1/things", alice, "down-1", `{}`))
		if code != http.StatusServiceUnavailable || hd.Get("Retry-After") == "" || problemType(t, body) != "store-unavailable" {
			t.Errorf("dead store: %d Retry-After %q %s; want 503 store-unavailable with Retry-After", code, hd.Get("Retry-After"), body)
		}
	})
	if runs.Load() != 0 {
		t.Errorf("the intent ran %d times, want 0", runs.Load())
	}
}
