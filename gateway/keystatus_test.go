package gateway_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/gateway"
)

// keyStatusEndpoints adds to create-thing an optional-key endpoint and a
// shadow-mode one.
const keyStatusEndpoints = `  - name: maybe-thing
    method: POST
    path: /v1/maybe
    key: optional
    upstream_timeout: 5s
  - name: shadow-thing
    method: POST
    path: /v1/shadow
    mode: shadow
    upstream_timeout: 5s
`

// TestEveryKeyedAnswerCarriesTheKeyStatus: every answer to a request that
// carried an Idempotency-Key says what became of the key (created,
// replayed, in-progress, conflict, ignored, rejected), over any value the
// upstream itself set; an answer to a request without a key has none, and
// Idempotent-Replayed is kept on replays.
func TestEveryKeyedAnswerCarriesTheKeyStatus(t *testing.T) {
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// An upstream that says something of its own is overruled.
		w.Header().Set(gateway.HeaderKeyStatus, "replayed")
		if r.Header.Get("Idempotency-Key") == "slow-1" {
			started <- struct{}{}
			<-release
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"id":"t1"}`))
	})
	srv := serveWrapped(t, openStore(t, 8), keyStatusEndpoints, h)
	alice := token(t, "alice")
	things := srv.URL + "/v1/things"

	slow := make(chan string, 1)
	go func() {
		_, hd, _ := do(t, post(t, things, alice, "slow-1", `{}`))
		slow <- hd.Get(gateway.HeaderKeyStatus)
	}()
	<-started

	badType := post(t, things, alice, "k-type", `a=b`)
	badType.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	unrouted := post(t, srv.URL+"/v1/other", alice, "k-other", `{}`)
	cases := []struct {
		name       string
		req        *http.Request
		wantStatus int
		want       string
		replayed   string
	}{
		{"first run", post(t, things, alice, "k-1", `{"a":1}`), 201, gateway.KeyStatusCreated, ""},
		{"retry", post(t, things, alice, "k-1", `{"a":1}`), 201, gateway.KeyStatusReplayed, "true"},
		{"quoted retry", post(t, things, alice, `"k-1"`, `{"a":1}`), 201, gateway.KeyStatusReplayed, "true"},
		{"other request", post(t, things, alice, "k-1", `{"a":2}`), 422, gateway.KeyStatusConflict, ""},
		{"in flight", post(t, things, alice, "slow-1", `{}`), 409, gateway.KeyStatusInProgress, ""},
		{"invalid key", post(t, things, alice, `"unterminated`, `{}`), 400, gateway.KeyStatusRejected, ""},
		{"wrong media type", badType, 415, gateway.KeyStatusRejected, ""},
		{"no token", post(t, things, "", "k-2", `{}`), 401, gateway.KeyStatusRejected, ""},
		{"uncoordinated route", unrouted, 201, gateway.KeyStatusIgnored, ""},
		{"shadow endpoint", post(t, srv.URL+"/v1/shadow", alice, "k-3", `{}`), 201, gateway.KeyStatusIgnored, ""},
		{"shadow endpoint retry", post(t, srv.URL+"/v1/shadow", alice, "k-3", `{}`), 201, gateway.KeyStatusIgnored, ""},
		{"optional endpoint with a key", post(t, srv.URL+"/v1/maybe", alice, "k-4", `{}`), 201, gateway.KeyStatusCreated, ""},
		// Without a key the gateway says nothing: the upstream's own header passes.
		{"optional endpoint without a key", post(t, srv.URL+"/v1/maybe", alice, "", `{}`), 201, "replayed", ""},
	}
	for _, tc := range cases {
		st, hd, body := do(t, tc.req)
		got := hd.Get(gateway.HeaderKeyStatus)
		if st != tc.wantStatus || got != tc.want || hd.Get(gateway.HeaderReplayed) != tc.replayed {
			t.Errorf("%s: %d %s=%q Idempotent-Replayed=%q (%s), want %d %q replayed %q",
				tc.name, st, gateway.HeaderKeyStatus, got, hd.Get(gateway.HeaderReplayed), strings.TrimSpace(body),
				tc.wantStatus, tc.want, tc.replayed)
		}
		if n := len(hd.Values(gateway.HeaderKeyStatus)); n > 1 {
			t.Errorf("%s: %d %s headers, want one", tc.name, n, gateway.HeaderKeyStatus)
		}
	}
	close(release)
	if got := <-slow; got != gateway.KeyStatusCreated {
		t.Errorf("the slow first run: %s %q, want %q", gateway.HeaderKeyStatus, got, gateway.KeyStatusCreated)
	}
}

// TestAsyncAnswersCarryTheKeyStatus: on an async endpoint the first 202
// is created, a retry while the task runs is in-progress, and one after it
// finished is replayed (the same task either way).
func TestAsyncAnswersCarryTheKeyStatus(t *testing.T) {
	s, fake := clockedStore(t, 8)
	up := newHeldRun(t)
	_, srv := serveClocked(t, s, fake, "    lease: 30s\n    async: true\n", up)
	t.Cleanup(up.free)
	alice := token(t, "alice")
	statusOf := func() (int, string) {
		st, hd, _ := do(t, post(t, srv.URL+"/v1/things", alice, "held-1", `{}`))
		return st, hd.Get(gateway.HeaderKeyStatus)
	}
	if st, ks := statusOf(); st != http.StatusAccepted || ks != gateway.KeyStatusCreated {
		t.Fatalf("first: %d %q, want 202 created", st, ks)
	}
	<-up.started
	if st, ks := statusOf(); st != http.StatusAccepted || ks != gateway.KeyStatusInProgress {
		t.Errorf("retry while running: %d %q, want 202 in-progress", st, ks)
	}
	up.free()
	waitState(t, s, reviewScope(t, "alice", "held-1"), "COMPLETED", 20*time.Second)
	if st, ks := statusOf(); st != http.StatusAccepted || ks != gateway.KeyStatusReplayed {
		t.Errorf("retry after it finished: %d %q, want 202 replayed", st, ks)
	}
}
