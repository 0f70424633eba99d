package gateway_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

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
	s := store(t, 8)
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
