package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/sqlstore"
)

// twoTierEndpoint keeps the full answer 24h and the key 30 days.
const twoTierEndpoint = "    ttl: 720h\n    replay_ttl: 24h\n"

// serveOnStore serves upstream through a gateway over s with the test
// endpoint configured by extra.
func serveOnStore(t *testing.T, s *sqlstore.Store, extra string, upstream http.Handler) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(upstream)
	t.Cleanup(up.Close)
	u, err := url.Parse(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(gateway.Config{Region: "test", Worker: "w", Store: s, Auth: verifier(t),
		Endpoints: endpoints(t, extra), Next: gateway.NewProxy(u, nil)})
	return served(t, g, err)
}

// creating answers a POST with 201 and a Location, counting the runs, and
// a GET with the thing as it is now.
func creating(runs *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet {
			io.WriteString(w, `{"id":"t1","now":true}`)
			return
		}
		runs.Add(1)
		w.Header().Set("Location", "/v1/things/t1")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"t1"}`)
	})
}

// compactAfter moves the store's clock past the endpoint's replay_ttl and
// runs cleanup, which must compact the one record.
func compactAfter(t *testing.T, s *sqlstore.Store, c *clock.Fake, d time.Duration) {
	t.Helper()
	c.Advance(d)
	if n, err := s.Cleanup(context.Background(), 0); err != nil || n != 1 {
		t.Fatalf("cleanup after %s: %d records, %v; want 1 compacted", d, n, err)
	}
}

func TestARetryAfterReplayTTLGetsReplayExpiredAndNeverRunsAgain(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	s := storeOnClock(t, fake, 8)
	var runs atomic.Int64
	srv := serveOnStore(t, s, twoTierEndpoint, creating(&runs))
	alice := token(t, "alice")
	const key = "two-tier-key-0001"

	status, h, _ := do(t, post(t, srv.URL+"/v1/things", alice, key, `{"n":1}`))
	if status != http.StatusCreated || h.Get(gateway.HeaderKeyStatus) != gateway.KeyStatusCreated {
		t.Fatalf("first run: %d %s", status, h.Get(gateway.HeaderKeyStatus))
	}
	promised := expires(t, h)
	opID := h.Get(gateway.HeaderOperationID)
	compactAfter(t, s, fake, 25*time.Hour)

	status, h, body := do(t, post(t, srv.URL+"/v1/things", alice, key, `{"n":1}`))
	var p struct {
		Type           string `json:"type"`
		OperationID    string `json:"operation_id"`
		OperationState string `json:"operation_state"`
		RecordedStatus int    `json:"recorded_status"`
		ResourceID     string `json:"resource_id"`
		NewKeySafe     bool   `json:"new_key_safe"`
	}
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatalf("retry: %s: %v", describe(status, h, body), err)
	}
	switch {
	case status != http.StatusGone || p.Type != "https://idemcoord.dev/problems/replay-expired":
		t.Fatalf("retry after replay_ttl: %s, want 410 replay-expired", describe(status, h, body))
	case p.OperationID != opID || h.Get(gateway.HeaderOperationID) != opID || p.OperationState != "COMPLETED" ||
		p.RecordedStatus != http.StatusCreated || p.ResourceID != "t1" || p.NewKeySafe:
		t.Fatalf("retry after replay_ttl: %s, want operation %s COMPLETED, recorded 201, resource t1, new_key_safe false",
			body, opID)
	case h.Get(gateway.HeaderKeyStatus) != gateway.KeyStatusReplayed:
		t.Fatalf("retry after replay_ttl: Idempotency-Status %q, want replayed", h.Get(gateway.HeaderKeyStatus))
	case !expires(t, h).Equal(promised):
		t.Fatalf("retry after replay_ttl: key honoured until %v, the first run promised %v", expires(t, h), promised)
	}
	if status, h, body := do(t, post(t, srv.URL+"/v1/things", alice, key, `{"n":2}`)); status != http.StatusUnprocessableEntity {
		t.Fatalf("another request under the marker's key: %s, want 422", describe(status, h, body))
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("upstream ran %d times, want once", n)
	}
}

func TestAReferenceEndpointsMarkerStillReReadsTheResource(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	s := storeOnClock(t, fake, 8)
	var runs atomic.Int64
	srv := serveOnStore(t, s, twoTierEndpoint+referenceEndpoint, creating(&runs))
	alice := token(t, "alice")
	const key = "two-tier-ref-0001"
	if status, h, body := do(t, post(t, srv.URL+"/v1/things", alice, key, `{"n":1}`)); status != http.StatusCreated {
		t.Fatalf("first run: %s", describe(status, h, body))
	}
	compactAfter(t, s, fake, 25*time.Hour)
	status, h, body := do(t, post(t, srv.URL+"/v1/things", alice, key, `{"n":1}`))
	if status != http.StatusCreated || body != `{"id":"t1","now":true}` || h.Get(gateway.HeaderReplayed) != "true" {
		t.Fatalf("retry after replay_ttl: %s, want 201 with the resource re-read", describe(status, h, body))
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("upstream ran %d times, want once", n)
	}
}
