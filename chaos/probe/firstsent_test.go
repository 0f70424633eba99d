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

// TestResolveKeepsTheIntentsFirstSentTime: the gateway takes a retry
// whose Idempotency-First-Sent differs from the key's first attempt for
// another intent (422). Its first answer asks for Retry-After: 1, so the
// retry is sent at least a second later, in another second of the
// header's resolution: it must still carry the first attempt's value.
func TestResolveKeepsTheIntentsFirstSentTime(t *testing.T) {
	var mu sync.Mutex
	first := ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	}))
	defer srv.Close()
	c, err := client.New(client.Config{BaseURL: srv.URL, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	rec := history.NewRecorder()
	in := Intent{Actor: "demo/probe", N: 1, Path: "/v1/payments", Key: "probe-key", Reference: "r", Body: []byte(`{}`)}
	last, err := Resolve(context.Background(), rec, []Gateway{{Name: "us-east", Client: c}}, in, history.Operation{})
	if err != nil || !last.Acknowledged() {
		t.Errorf("Resolve = status %d, %v; want the retry acknowledged, not taken for another intent", last.Status, err)
	}
}
