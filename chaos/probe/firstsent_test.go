package probe

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/idemcoord/idemcoord/chaos/history"
	"github.com/idemcoord/idemcoord/client"
)

// oneGateway serves h as us-east's gateway for the test, through a
// one-attempt client as the drill's probe uses.
func oneGateway(t *testing.T, h http.HandlerFunc) []Gateway {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := client.New(client.Config{BaseURL: srv.URL, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	return []Gateway{{Name: "us-east", Client: c}}
}

// TestResolveKeepsTheIntentsFirstSentTime: the gateway takes a retry
// whose Idempotency-First-Sent differs from the key's first attempt for
// another intent (422). Its first answer asks for Retry-After: 1, so the
// retry is sent at least a second later, in another second of the
// header's resolution: it must still carry the first attempt's value.
func TestResolveKeepsTheIntentsFirstSentTime(t *testing.T) {
	var mu sync.Mutex
	first := ""
	gws := oneGateway(t, func(w http.ResponseWriter, r *http.Request) {
		sent := r.Header.Get(client.HeaderFirstSent)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case first == "":
			first = sent
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusConflict)
		case sent != first:
			w.WriteHeader(http.StatusUnprocessableEntity)
		default:
			w.WriteHeader(http.StatusCreated)
		}
	})
	rec := history.NewRecorder()
	in := Intent{Actor: "demo/probe", N: 1, Path: "/v1/payments", Key: "probe-key", Reference: "r", Body: []byte(`{}`)}
	last, err := Resolve(context.Background(), rec, gws, in, history.Operation{})
	if err != nil || !last.Acknowledged() {
		t.Errorf("Resolve = status %d, %v; want the retry acknowledged, not taken for another intent", last.Status, err)
	}
}

// TestAProbeIntentsAttemptsAreOneClientCall: the drill's probe retries an
// intent until it is answered, as the SDK's Do does; the report counts
// availability per client call, so every attempt of one probe intent
// carries the same ClientCall. Before, each attempt was a call of its
// own: mixed seed 5 (sdk) counted the probe's attempt to the region a
// crash point killed as an unaffected actor's call left unanswered
// (unaffected 0.9987), although its retry was answered 0.2 s later.
func TestAProbeIntentsAttemptsAreOneClientCall(t *testing.T) {
	n := 0
	var mu sync.Mutex
	gws := oneGateway(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		first := n == 1
		mu.Unlock()
		if first {
			w.WriteHeader(http.StatusServiceUnavailable) // no final answer: retried
			return
		}
		w.WriteHeader(http.StatusCreated)
	})
	rec := history.NewRecorder()
	in := Intent{Actor: "demo/probe", N: 7, Path: "/v1/payments", Key: "probe-key-7", Reference: "r", Body: []byte(`{}`)}
	if _, err := Resolve(context.Background(), rec, gws, in, history.Operation{}); err != nil {
		t.Fatal(err)
	}
	ops := rec.History().Filter(history.KindRequest)
	if len(ops) != 2 {
		t.Fatalf("attempts recorded: %d, want 2 (a 503, then a 201)", len(ops))
	}
	for _, op := range ops {
		if op.ClientID != ClientID || op.ClientCall != in.N {
			t.Errorf("attempt %d: client %d, client call %d; want client %d, call %d (the intent's)", op.Attempt, op.ClientID,
				op.ClientCall, ClientID, in.N)
		}
	}
}
