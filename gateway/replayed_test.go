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

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// deadClaim claims key for actor t/<subject> as a worker that then dies,
// with the fingerprint the gateway computes for body on endpoint extra.
func deadClaim(t testing.TB, s *sqlstore.Store, subject, key, body, extra string, lease time.Duration) {
	t.Helper()
	eps := endpoints(t, extra)
	fp, err := idempotency.ComputeFingerprint(idempotency.Request{Method: "POST", Path: "/v1/things",
		ContentType: "application/json", Body: []byte(body)}, eps[0].Policy().Fingerprint)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Begin(context.Background(), store.ClaimRequest{Scope: reviewScope(t, subject, key), Fingerprint: fp,
		Token:  fencing.Token{Shard: shard.Of("t/"+subject, shard.DefaultCount), Epoch: 1, Region: "test"},
		Worker: "dead", Lease: lease, TTL: time.Hour})
	if err != nil || c.Outcome != store.FirstRun {
		t.Fatalf("setup claim: %v %v", c.Outcome, err)
	}
}

// TestResolvedRetryableAnswerIsNotAReplay: a takeover asks the resolve
// path, which says the crashed run answered 503. That is a retryable
// failure (the next retry runs it again), so the 503 goes out without
// Idempotent-Replayed: the SDK treats a replay as final and would stop.
func TestResolvedRetryableAnswerIsNotAReplay(t *testing.T) {
	var runs atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/things", func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.WriteHeader(http.StatusCreated)
	})
	mux.HandleFunc("GET /internal/operations/{id}", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, resolutionBody(http.StatusServiceUnavailable, `{"error":"busy"}`))
	})
	up := httptest.NewServer(mux)
	defer up.Close()
	u, _ := url.Parse(up.URL)
	s, fake := clockedStore(t, 8)
	body := `{"amount":"5"}`
	deadClaim(t, s, "alice", "crashed-1", body, resolveEndpoint, 10*time.Second)
	fake.Advance(11 * time.Second) // the dead worker's lease runs out
	_, srv := serveGateway(t, "w", s, fake, u, resolveEndpoint)
	st, hd, b := do(t, post(t, srv.URL+"/v1/things", token(t, "alice"), "crashed-1", body))
	if st != http.StatusServiceUnavailable || hd.Get("Idempotent-Replayed") != "" {
		t.Fatalf("takeover answered %s, want the resolved 503 without Idempotent-Replayed", describe(st, hd, b))
	}
	rec, err := s.Read(context.Background(), reviewScope(t, "alice", "crashed-1"))
	if err != nil || rec.State != idempotency.RetryableFailure {
		t.Fatalf("record %s (%v), want RETRYABLE_FAILURE", rec.State, err)
	}
	if runs.Load() != 0 {
		t.Fatalf("upstream ran %d times, want 0 (the resolve path answered)", runs.Load())
	}
}
