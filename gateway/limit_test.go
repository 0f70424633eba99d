package gateway_test

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
)

func TestReplaysBeyondTheActorsBucketGet429AndOtherActorsAreNotAffected(t *testing.T) {
	s := openStore(t, 8)
	var runs atomic.Int64
	// One token an hour: the bucket cannot refill while the test runs.
	srv := serveWrapped(t, s, "    limit: {rate: 1/h, burst: 2}\n", countingHandler(&runs))
	const key, body = "limit-key-0001", `{"n":1}`

	for _, actor := range []string{"alice", "bob"} {
		auth := token(t, actor)
		// The first run reaches the upstream and is not charged; two
		// replays empty the bucket; the third is refused.
		want := []int{http.StatusCreated, http.StatusCreated, http.StatusCreated, http.StatusTooManyRequests}
		for i, w := range want {
			status, h, got := do(t, post(t, srv.URL+"/v1/things", auth, key, body))
			if status != w {
				t.Fatalf("%s request %d: status %d, want %d (%s)", actor, i, status, w, got)
			}
			if i > 0 && w == http.StatusCreated && h.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("%s request %d is no replay", actor, i)
			}
			if w == http.StatusTooManyRequests {
				secs, err := strconv.Atoi(h.Get("Retry-After"))
				if err != nil || secs < 1 || secs > 3600 {
					t.Fatalf("%s: Retry-After %q, want whole seconds until the next token (<= 3600)", actor, h.Get("Retry-After"))
				}
			}
		}
	}
	if runs.Load() != 2 {
		t.Fatalf("upstream ran %d times, want once per actor", runs.Load())
	}
}
