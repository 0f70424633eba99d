package client_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/client"
)

// pausedRegion is a region whose process stopped after reading requests:
// it keeps the connection open and never answers (a SIGSTOPped idemd), and
// records what it read.
type pausedRegion struct {
	*httptest.Server
	mu   sync.Mutex
	seen []http.Header
}

func newPausedRegion(t *testing.T) *pausedRegion {
	p := &pausedRegion{}
	release := make(chan struct{})
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			p.mu.Lock()
			p.seen = append(p.seen, r.Header.Clone())
			p.mu.Unlock()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(p.Close)
	t.Cleanup(func() { close(release) })
	return p
}

func (p *pausedRegion) requests() []http.Header {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]http.Header(nil), p.seen...)
}

// TestACallSentToAPausedRegionIsRetriedElsewhereUnderTheSameKey: a region
// that read the request and stopped answering does not hold the call: after
// the response-header timeout the next attempt goes to the next region with
// the same key and the same first-sent time, and its answer is the call's.
func TestACallSentToAPausedRegionIsRetriedElsewhereUnderTheSameKey(t *testing.T) {
	paused := newPausedRegion(t)
	var (
		mu   sync.Mutex
		seen []http.Header
	)
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(live.Close)
	c, err := client.New(client.Config{
		Regions:               []client.Region{{Name: "us-east", URL: paused.URL}, {Name: "eu-west", URL: live.URL}},
		ResponseHeaderTimeout: 100 * time.Millisecond, Seed: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	key := client.NewKey()
	resp, err := c.Do(t.Context(), client.Intent{Method: http.MethodPost, Path: "/v1/payments", Key: key, Body: []byte(`{"amount":1}`)})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if resp.Status != http.StatusCreated {
		t.Fatalf("status %d, want the live region's 201", resp.Status)
	}
	stuck := paused.requests()
	mu.Lock()
	defer mu.Unlock()
	if len(stuck) != 1 || len(seen) != 1 {
		t.Fatalf("the paused region read %d attempts and the live one %d, want 1 and 1", len(stuck), len(seen))
	}
	for _, h := range []string{"Idempotency-Key", client.HeaderFirstSent} {
		if a, b := stuck[0].Get(h), seen[0].Get(h); a == "" || a != b {
			t.Errorf("%s: %q to the paused region, %q to the live one: the retry must be the same request", h, a, b)
		}
	}
}

// TestNoAnswerInTimeIsAnAttemptThatMayHaveRun: the last attempt ending
// without an answer in time gives up with ErrNoAnswerInTime, and never
// says a new key is safe (the paused region may have run it).
func TestNoAnswerInTimeIsAnAttemptThatMayHaveRun(t *testing.T) {
	paused := newPausedRegion(t)
	c, err := client.New(client.Config{BaseURL: paused.URL, ResponseHeaderTimeout: 50 * time.Millisecond, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Do(t.Context(), client.Intent{Method: http.MethodPost, Path: "/v1/payments", Key: client.NewKey(), Body: []byte(`{}`)})
	var gave *client.GaveUpError
	if !errors.As(err, &gave) || !errors.Is(err, client.ErrNoAnswerInTime) {
		t.Fatalf("Do: %v, want a *GaveUpError wrapping ErrNoAnswerInTime", err)
	}
	if errors.Is(err, client.ErrNotExecuted) {
		t.Errorf("Do: %v: an attempt that was written and never answered may have run; it must not say nothing was executed", err)
	}
}

// TestTheResponseHeaderTimeoutFollowsTheEndpointsUpstreamTimeout: with no
// explicit ResponseHeaderTimeout, an attempt waits the intent's (or the
// Client's) upstream timeout plus DefaultAnswerSlack, and a negative value
// turns the timeout off.
func TestTheResponseHeaderTimeoutFollowsTheEndpointsUpstreamTimeout(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    client.Config
		intent time.Duration
		want   time.Duration
	}{
		{"the coordinator's default", client.Config{}, 0, client.DefaultUpstreamTimeout + client.DefaultAnswerSlack},
		{"the client's upstream timeout", client.Config{UpstreamTimeout: 3 * time.Second}, 0, 5 * time.Second},
		{"the intent's upstream timeout", client.Config{UpstreamTimeout: 3 * time.Second}, time.Second, 3 * time.Second},
		{"an explicit value", client.Config{ResponseHeaderTimeout: 700 * time.Millisecond}, time.Second, 700 * time.Millisecond},
		{"turned off", client.Config{ResponseHeaderTimeout: -1}, time.Second, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := client.AnswerTimeout(tc.cfg, client.Intent{UpstreamTimeout: tc.intent}); got != tc.want {
				t.Errorf("response-header timeout %v, want %v", got, tc.want)
			}
		})
	}
}
