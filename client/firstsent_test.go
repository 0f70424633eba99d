package client_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/client"
	"github.com/idemcoord/idemcoord/clock"
)

// TestDoSendsTheFirstAttemptsTimeOnEveryRetry: a keyed intent carries
// Idempotency-First-Sent, the time of its first attempt, and every retry
// sends that same value although the clock moved on; a value the caller
// gives in Intent.Header (an intent retried across Do calls) is kept.
func TestDoSendsTheFirstAttemptsTimeOnEveryRetry(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get(client.HeaderFirstSent))
		n := len(seen)
		mu.Unlock()
		if n%2 == 1 { // every intent's first attempt fails retryably
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	fake := clock.NewFake(testEpoch)
	c, err := client.New(client.Config{BaseURL: srv.URL, Clock: fake, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	run := func(in client.Intent) {
		t.Helper()
		done := make(chan error, 1)
		go func() {
			_, err := c.Do(t.Context(), in)
			done <- err
		}()
		fake.BlockUntil(1)
		fake.Advance(30 * time.Second)
		if err := <-done; err != nil {
			t.Fatalf("Do: %v", err)
		}
	}
	run(client.Intent{Method: http.MethodPost, Path: "/v1/payments", Key: client.NewKey(), Body: []byte(`{}`)})
	earlier := "Sun, 29 Nov 2026 08:00:00 GMT"
	run(client.Intent{Method: http.MethodPost, Path: "/v1/payments", Key: client.NewKey(), Body: []byte(`{}`),
		Header: http.Header{client.HeaderFirstSent: {earlier}}})
	first := testEpoch.UTC().Format(http.TimeFormat)
	want := []string{first, first, earlier, earlier}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != len(want) {
		t.Fatalf("attempts sent %q, want %q", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Errorf("attempt %d sent Idempotency-First-Sent %q, want %q (all: %q)", i+1, seen[i], want[i], seen)
		}
	}
}
