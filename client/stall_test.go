package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/client"
)

// stalledRegion is a region whose process is paused: it keeps the
// connections it accepted and answers nothing, /healthz included. It
// counts the intents and the /healthz probes it read.
func stalledRegion(t *testing.T) (url string, intents, probes *atomic.Int64) {
	intents, probes = new(atomic.Int64), new(atomic.Int64)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			probes.Add(1)
		case "/readyz":
		default:
			intents.Add(1)
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	return srv.URL, intents, probes
}

// leftForTheLiveRegion sends one intent to first (a region that reads it
// and holds it) with a live region second, a minute's response-header
// timeout and a 50 ms stall probe. The call must end with the live
// region's 201 on the second attempt, under the same key: first read one
// intent and one /healthz probe (its counters), the live region one keyed
// intent. what names first in the failures.
func leftForTheLiveRegion(t *testing.T, first string, intents, probes *atomic.Int64, what string) {
	t.Helper()
	var liveKeys atomic.Int64
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Idempotency-Key") != "" {
			liveKeys.Add(1)
		}
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(live.Close)
	c, err := client.New(client.Config{
		Regions:               []client.Region{{Name: "us-east", URL: first}, {Name: "eu-west", URL: live.URL}},
		ResponseHeaderTimeout: time.Minute, StallProbe: 50 * time.Millisecond, Seed: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp, err := c.Do(ctx, client.Intent{Method: http.MethodPost, Path: "/v1/payments", Key: client.NewKey(), Body: []byte(`{"amount":1}`)})
	if err != nil {
		t.Fatalf("Do: %v (the %s region's attempt was not left)", err, what)
	}
	if resp.Status != http.StatusCreated || resp.Attempts != 2 {
		t.Fatalf("status %d after %d attempts, want the live region's 201 on the second", resp.Status, resp.Attempts)
	}
	if intents.Load() != 1 || probes.Load() != 1 || liveKeys.Load() != 1 {
		t.Fatalf("%s region read %d intents and %d probes, live region %d keyed intents; want 1, 1, 1",
			what, intents.Load(), probes.Load(), liveKeys.Load())
	}
}

// TestAnAttemptToAStalledRegionEndsWhenItsHealthzDoesNotAnswer: with a
// response-header timeout of a minute (an endpoint with a long upstream
// timeout), an attempt that a paused region read is not waited out: its
// /healthz does not answer either, so the attempt ends after the stall
// probe, and the next goes to the live region under the same key, whose
// answer is the call's. Without the probe the call took the whole minute.
func TestAnAttemptToAStalledRegionEndsWhenItsHealthzDoesNotAnswer(t *testing.T) {
	stalled, intents, probes := stalledRegion(t)
	leftForTheLiveRegion(t, stalled, intents, probes, "stalled")
}

// TestAnAttemptToARegionCutOffFromEtcdEndsWhenItsHealthzSaysSo: a
// region cut off from etcd (and, here, from its store) holds the intent
// it read, while its /healthz answers 200 with "Idemcoord-Etcd:
// unreachable": its lease is going and its shards are about to move. The
// attempt ends at the first stall probe, and the next goes to the live
// region under the same key. Before, a /healthz that answered, whatever
// it said, left the attempt waiting for its response-header timeout (a
// minute here; 3.5 s in the drills' cut_both faults).
func TestAnAttemptToARegionCutOffFromEtcdEndsWhenItsHealthzSaysSo(t *testing.T) {
	var intents, probes atomic.Int64
	release := make(chan struct{})
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			probes.Add(1)
			w.Header().Set("Idemcoord-Etcd", "unreachable")
			w.Write([]byte("ok\n"))
			return
		case "/readyz":
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		intents.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(cut.Close)
	t.Cleanup(func() { close(release) })
	leftForTheLiveRegion(t, cut.URL, &intents, &probes, "cut-off")
}

// TestARegionThatAnswersItsHealthzIsWaitedFor: a live region slow to
// answer an intent (a long upstream call) answers its /healthz, so the
// attempt is waited for, probed again while it lasts, and never sent a
// second time.
func TestARegionThatAnswersItsHealthzIsWaitedFor(t *testing.T) {
	var intents, probes atomic.Int64
	twice := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			if probes.Add(1) == 2 {
				close(twice)
			}
			w.Write([]byte("ok\n"))
			return
		}
		intents.Add(1)
		// Answer once the client has asked /healthz twice: the attempt
		// outlived two stall probes and was left alone.
		select {
		case <-r.Context().Done():
			return
		case <-twice:
		}
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(slow.Close)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			t.Errorf("%s %s reached the second region: the live region's attempt was left", r.Method, r.URL.Path)
		}
	}))
	t.Cleanup(other.Close)
	c, err := client.New(client.Config{Regions: []client.Region{{Name: "us-east", URL: slow.URL}, {Name: "eu-west", URL: other.URL}},
		ResponseHeaderTimeout: time.Minute, StallProbe: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(t.Context(), client.Intent{Method: http.MethodPost, Path: "/v1/payments", Key: client.NewKey(), Body: []byte(`{}`)})
	if err != nil || resp.Status != http.StatusCreated || resp.Attempts != 1 || intents.Load() != 1 {
		t.Fatalf("Do: %v, %+v; %d intents read: want one attempt answered 201", err, resp, intents.Load())
	}
}

// TestOverOneURLNoStallProbeIsSent: a client of one URL (one region, or a
// global entry in front of every region, whose /healthz a load balancer
// may answer from another backend) never probes; a client of several
// does, unless the response-header timeout strikes first or the probe is
// turned off.
func TestOverOneURLNoStallProbeIsSent(t *testing.T) {
	two := []client.Region{{Name: "us-east", URL: "http://127.0.0.1:1"}, {Name: "eu-west", URL: "http://127.0.0.1:2"}}
	for _, tc := range []struct {
		name string
		cfg  client.Config
		want bool
	}{
		{"one URL", client.Config{BaseURL: "http://127.0.0.1:1"}, false},
		{"one region", client.Config{Regions: two[:1]}, false},
		{"two regions", client.Config{Regions: two}, true},
		{"two regions, the timeout first", client.Config{Regions: two, ResponseHeaderTimeout: time.Second}, false},
		{"two regions, turned off", client.Config{Regions: two, StallProbe: -1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := client.New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := client.StallProbed(c); got != tc.want {
				t.Errorf("stall probe %v, want %v", got, tc.want)
			}
		})
	}
}
