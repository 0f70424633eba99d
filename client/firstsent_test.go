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

// TestARetryInALaterDoCallIsTheSameRequest: an intent retried by calling
// Do again with the same key (after Do gave up, say on an unknown
// outcome) sends the first-sent time the first call stamped, not the
// clock's new time: the server takes another first-sent time under the
// same key for another request (422) and would refuse the retry.
func TestARetryInALaterDoCallIsTheSameRequest(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get(client.HeaderFirstSent))
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	fake := clock.NewFake(testEpoch)
	c, err := client.New(client.Config{BaseURL: srv.URL, Clock: fake, Seed: 1, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	key, other := client.NewKey(), client.NewKey()
	for i, k := range []string{key, key, other} {
		if _, err := c.Do(t.Context(), client.Intent{Method: http.MethodPost, Path: "/v1/payments", Key: k, Body: []byte(`{}`)}); err != nil {
			t.Fatalf("Do %d: %v", i+1, err)
		}
		fake.Advance(90 * time.Second)
	}
	first := testEpoch.UTC().Format(http.TimeFormat)
	want := []string{first, first, testEpoch.Add(180 * time.Second).UTC().Format(http.TimeFormat)}
	mu.Lock()
	defer mu.Unlock()
	for i := range want {
		if i >= len(seen) || seen[i] != want[i] {
			t.Fatalf("Idempotency-First-Sent sent %q, want %q", seen, want)
		}
	}
}
