package gateway_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/gateway"
)

// TestRetryAfterFollowsExecutionTimes: a 409 for an operation in flight
// suggests waiting about as long as the endpoint's operations take
// (rounded up to whole seconds), not the whole lease left; and never
// longer than the lease left, after which a retry takes a dead worker's
// claim over.
func TestRetryAfterFollowsExecutionTimes(t *testing.T) {
	s, fake := clockedStore(t, 8)
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("Idempotency-Key") {
		case "busy-1":
			started <- struct{}{}
			<-release
		default:
			fake.Advance(2500 * time.Millisecond) // operations take 2.5 s
		}
		w.WriteHeader(http.StatusCreated)
	})
	g, err := gateway.Wrap(gateway.Config{Region: "test", Worker: "w", Store: s, Auth: verifier(t),
		Endpoints: endpoints(t, "    lease: 30s\n"), Clock: fake}, h)
	srv := served(t, g, err)
	alice := token(t, "alice")
	for _, k := range []string{"warm-1", "warm-2", "warm-3"} {
		if st, hd, b := do(t, post(t, srv.URL+"/v1/things", alice, k, `{}`)); st != http.StatusCreated {
			t.Fatalf("%s: %s", k, describe(st, hd, b))
		}
	}
	first := make(chan int, 1)
	go func() {
		st, _, _ := do(t, post(t, srv.URL+"/v1/things", alice, "busy-1", `{}`))
		first <- st
	}()
	<-started
	st, hd, b := do(t, post(t, srv.URL+"/v1/things", alice, "busy-1", `{}`))
	if st != http.StatusConflict || hd.Get("Retry-After") != "3" {
		t.Errorf("retry while in flight: %s Retry-After %q, want 409 with 3 (2.5 s operations, not the 30 s lease)",
			describe(st, hd, b), hd.Get("Retry-After"))
	}
	close(release)
	<-first

	// A dead worker's claim with 2 s of lease left: the hint is capped.
	deadClaim(t, s, "alice", "dead-1", `{}`, "    lease: 30s\n", 2*time.Second)
	st, hd, b = do(t, post(t, srv.URL+"/v1/things", alice, "dead-1", `{}`))
	if st != http.StatusConflict || hd.Get("Retry-After") != "2" {
		t.Errorf("retry of a claim with 2 s left: %s Retry-After %q, want 409 with 2", describe(st, hd, b), hd.Get("Retry-After"))
	}
}
