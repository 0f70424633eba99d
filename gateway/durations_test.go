package gateway_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestProblemsWriteDurationsAsTheConfigDoes: a problem that quotes a
// duration (the endpoint's ttl in a 412, the wait cap in a 400) writes it
// as a config file does (1h, 1m), not as Go's 1h0m0s.
func TestProblemsWriteDurationsAsTheConfigDoes(t *testing.T) {
	var runs atomic.Int64
	srv := serveWrapped(t, openStore(t, 4), "    ttl: 1h\n    lease: 30s\n", countingHandler(&runs))
	alice := token(t, "alice")
	st, hd, b := do(t, firstSentPost(t, srv.URL, alice, "dur-1", httpDate(time.Now().Add(-2*time.Hour))))
	if st != http.StatusPreconditionFailed || !strings.Contains(b, "retention of keys (1h)") {
		t.Errorf("first sent 2h ago: %s; want 412 naming the ttl as 1h", describe(st, hd, b))
	}
	st, hd, b = do(t, firstSentPost(t, srv.URL, alice, "dur-2", httpDate(time.Now().Add(time.Hour))))
	if st != http.StatusPreconditionFailed || !strings.Contains(b, "more than 1m ahead") {
		t.Errorf("first sent 1h ahead: %s; want 412 naming the skew as 1m", describe(st, hd, b))
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/operations/01a2355d-3aff-738e-a7ab-3b5333b9107a?wait=2m", nil)
	req.Header.Set("Authorization", alice)
	st, hd, b = do(t, req)
	if st != http.StatusBadRequest || !strings.Contains(b, "wait: at most 1m, got 2m") {
		t.Errorf("wait=2m: %s; want 400 naming the cap as 1m", describe(st, hd, b))
	}
	if strings.Contains(b, "m0s") {
		t.Errorf("a problem quotes Go's duration form: %s", b)
	}
	if n := runs.Load(); n != 0 {
		t.Errorf("upstream ran %d times, want 0", n)
	}
}
