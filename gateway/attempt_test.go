package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// clockedStore opens a store on a fresh database whose lease time is the
// fake clock's (sqlstore.Config.DBClock), so a test moves leases past expiry
// instead of waiting for them.
func storeOnClock(t testing.TB, lease *clock.Fake, maxConns int32) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.Open(context.Background(), sqlstore.Config{Migrate: true, DSN: pgtest.NewDatabase(t), MaxConns: maxConns, DBClock: lease})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	bootstrap(t, s)
	return s
}

// TestRetryAfterUnsentTakeoverOfRetryableFailureRuns: on an endpoint
// without a resolve path, attempt 1 gets a retryable 503 (after recording
// that it was sending), attempt 2 takes the key over and dies before it
// sends anything. Attempt 3 must run the intent: the old attempt's
// "sending" stage says nothing about attempt 2, which never sent, so
// holding the key OUTCOME_UNKNOWN would strand an intent that never took
// effect.
func TestRetryAfterUnsentTakeoverOfRetryableFailureRuns(t *testing.T) {
	ctx := context.Background()
	var runs atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if runs.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"created":true}`)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	lease := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	s := storeOnClock(t, lease, 16)
	eps := endpoints(t, "    lease: 10s\n    upstream_timeout: 2s\n")
	g, err := gateway.New(gateway.Config{Region: "test", Worker: "w", Store: s, Auth: verifier(t),
		Endpoints: eps, Next: gateway.NewProxy(u, nil)})
	srv := served(t, g, err)
	alice := token(t, "alice")
	body := `{"amount":"5"}`

	if code, h, b := do(t, post(t, srv.URL+"/v1/things", alice, "stale-stage", body)); code != http.StatusServiceUnavailable {
		t.Fatalf("attempt 1: %s, want the upstream's retryable 503", describe(code, h, b))
	}
	sc := reviewScope(t, "alice", "stale-stage")
	if rec, err := s.Read(ctx, sc); err != nil || rec.State != idempotency.RetryableFailure {
		t.Fatalf("after attempt 1: %s (%v), want RETRYABLE_FAILURE", rec.State, err)
	}

	// Attempt 2: an instance takes the key over (the very claim a gateway
	// makes) and dies before it sends anything.
	fp, err := idempotency.ComputeFingerprintVersion(idempotency.Request{Method: "POST", Path: "/v1/things",
		ContentType: "application/json", Body: []byte(body)}, eps[0].Policy().Fingerprint, idempotency.FingerprintV2)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Begin(ctx, store.ClaimRequest{Scope: sc, Fingerprint: fp,
		Token:  fencing.Token{Shard: shard.Of("t/alice", shard.DefaultCount), Epoch: 1, Region: "test"},
		Worker: "dies-before-sending", Lease: 10 * time.Second, TTL: time.Hour})
	if err != nil || c.Outcome != store.TakenOver {
		t.Fatalf("attempt 2's takeover: %v %v", c.Outcome, err)
	}
	lease.Advance(11 * time.Second) // its lease runs out

	code, h, b := do(t, post(t, srv.URL+"/v1/things", alice, "stale-stage", body))
	if code != http.StatusCreated || runs.Load() != 2 {
		rec, _ := s.Read(ctx, sc)
		t.Fatalf("attempt 3: %s, upstream runs %d, record %s: want the intent run (201) by attempt 3",
			describe(code, h, b), runs.Load(), rec.State)
	}
}
