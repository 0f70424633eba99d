package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/gateway"
)

// expires parses the Idempotency-Key-Expires header of an answer.
func expires(t *testing.T, h http.Header) time.Time {
	t.Helper()
	v := h.Get(gateway.HeaderKeyExpires)
	if v == "" {
		t.Fatalf("no %s header; headers %v", gateway.HeaderKeyExpires, h)
	}
	at, err := http.ParseTime(v)
	if err != nil {
		t.Fatalf("%s %q is not an HTTP-date: %v", gateway.HeaderKeyExpires, v, err)
	}
	return at
}

func TestEveryCoordinatedAnswerSaysUntilWhenTheKeyIsHonoured(t *testing.T) {
	s := openStore(t, 8)
	var runs atomic.Int64
	srv := serveWrapped(t, s, "    ttl: 2h\n", countingHandler(&runs))
	alice := token(t, "alice")
	const key = "retention-key-0001"

	before := time.Now().Truncate(time.Second)
	status, h, _ := do(t, post(t, srv.URL+"/v1/things", alice, key, `{"n":1}`))
	if status != http.StatusCreated {
		t.Fatalf("first run: %d", status)
	}
	first := expires(t, h)
	if first.Before(before.Add(2 * time.Hour)) {
		t.Fatalf("first run advertises %v; want at least now + ttl 2h (%v)", first, before.Add(2*time.Hour))
	}
	rec, err := s.Lookup(context.Background(), "t/alice", uuid.MustParse(h.Get(gateway.HeaderOperationID)))
	if err != nil {
		t.Fatal(err)
	}
	if first.After(rec.ExpiresAt) {
		t.Fatalf("first run promises %v, past the record's expires_at %v", first, rec.ExpiresAt)
	}

	want := rec.ExpiresAt.UTC().Truncate(time.Second)
	r, err := http.NewRequest(http.MethodGet, srv.URL+"/v1/operations/"+rec.OperationID.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Authorization", alice)
	if status, h, _ := do(t, r); status != http.StatusOK || !expires(t, h).Equal(want) {
		t.Fatalf("operation status: %d, advertised %v, want %v", status, h.Get(gateway.HeaderKeyExpires), want)
	}
	cases := []struct {
		name, body string
		status     int
	}{
		{"replay", `{"n":1}`, http.StatusCreated},
		{"fingerprint mismatch", `{"n":2}`, http.StatusUnprocessableEntity},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, h, _ := do(t, post(t, srv.URL+"/v1/things", alice, key, tc.body))
			if status != tc.status {
				t.Fatalf("status %d, want %d", status, tc.status)
			}
			if got := expires(t, h); !got.Equal(want) {
				t.Fatalf("advertised %v, want the record's expires_at %v", got, want)
			}
		})
	}
	if runs.Load() != 1 {
		t.Fatalf("upstream ran %d times, want 1", runs.Load())
	}
}

func TestATakeoverAdvertisesTheExpiryItSet(t *testing.T) {
	var runs atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if runs.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable) // retryable: RETRYABLE_FAILURE
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	now := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	s := storeOnClock(t, now, 8)
	g, err := gateway.New(gateway.Config{Region: "test", Worker: "w", Store: s, Auth: verifier(t), Clock: now,
		Endpoints: endpoints(t, "    lease: 10s\n    ttl: 1h\n"), Next: gateway.NewProxy(u, nil)})
	if err != nil {
		t.Fatal(err)
	}
	startGateway(t, g)
	t.Cleanup(func() { g.Close() })
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	alice := token(t, "alice")
	const key = "takeover-expiry-1"

	if status, h, b := do(t, post(t, srv.URL+"/v1/things", alice, key, `{}`)); status != http.StatusServiceUnavailable {
		t.Fatalf("first run: %s, want the upstream's retryable 503", describe(status, h, b))
	}
	// Retried after the record's expires_at (claim + lease + ttl), before
	// any sweep: the takeover extends it to now + lease + ttl.
	now.Advance(2 * time.Hour)
	retriedAt := now.Now()
	status, h, b := do(t, post(t, srv.URL+"/v1/things", alice, key, `{}`))
	if status != http.StatusCreated || runs.Load() != 2 {
		t.Fatalf("retry: %s, upstream runs %d; want the takeover's 201", describe(status, h, b), runs.Load())
	}
	got := expires(t, h)
	if want := retriedAt.Add(time.Hour); got.Before(want) {
		t.Fatalf("the takeover advertises %v; want at least the retry's time + ttl (%v): the key is honoured until then", got, want)
	}
	rec, err := s.Read(context.Background(), reviewScope(t, "alice", key))
	if err != nil {
		t.Fatal(err)
	}
	if got.After(rec.ExpiresAt) {
		t.Fatalf("the takeover promises %v, past the record's expires_at %v", got, rec.ExpiresAt)
	}
}
