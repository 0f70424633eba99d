package client_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/client"
	"github.com/idemcoord/idemcoord/internal/testutil"
)

// deadURL is the URL of a loopback port nobody listens on: connecting is
// refused, so nothing is ever sent there.
func deadURL(t *testing.T) string {
	t.Helper()
	return "http://" + testutil.RefusingAddr(t)
}

// scripted answers the i-th request with answers[i] (the last one once
// they run out) and counts requests.
type scripted struct {
	mu      sync.Mutex
	answers []func(w http.ResponseWriter)
	seen    []*http.Request
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.seen = append(s.seen, r)
	a := s.answers[min(len(s.seen), len(s.answers))-1]
	s.mu.Unlock()
	a(w)
}

func (s *scripted) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

// refusal is a gateway 503 of the given problem kind, naming no operation.
func refusal(kind, retryAfter string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		problem(w, http.StatusServiceUnavailable, kind, "", "", false)
	}
}

// created is a 201 served by region, naming operation op.
func created(region, op string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("X-Idempotency-Region", region)
		w.Header().Set("X-Idempotency-Operation-Id", op)
		w.WriteHeader(http.StatusCreated)
	}
}

// multiRegion returns a client over regions whose waits are recorded, not
// slept.
func multiRegion(t *testing.T, regions ...client.Region) (*client.Client, *sleepRecorder) {
	t.Helper()
	rec := newSleepRecorder()
	c, err := client.New(client.Config{Regions: regions, Seed: 1, Clock: rec, Token: "tok",
		HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return c, rec
}

func serve(t *testing.T, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// sameIntent checks that two regions received the same intent: key,
// body, content type, token and the caller's own header.
func sameIntent(t *testing.T, a, b seenRequest) {
	t.Helper()
	if a != b {
		t.Fatalf("the regions received different requests:\n%+v\n%+v", a, b)
	}
}

// TestUnreachableRegionIsLeftAtOnceForTheNextWithTheSameIntent: the first
// region refuses the connection (nothing was sent), so the second gets the
// same intent at once, without a backoff wait, and runs it once.
func TestUnreachableRegionIsLeftAtOnceForTheNextWithTheSameIntent(t *testing.T) {
	g := newGateway()
	c, rec := multiRegion(t, client.Region{URL: deadURL(t)}, client.Region{URL: serve(t, g)})
	key := client.NewKey()
	resp, err := c.Do(t.Context(), client.Intent{Method: http.MethodPost, Path: "/v1/payments", Key: key,
		Body: []byte(`{"amount":"1.00"}`), Header: http.Header{"X-Trace": {"t1"}}})
	if err != nil || resp.Status != http.StatusCreated || resp.Attempts != 2 {
		t.Fatalf("Do = %+v, %v; want 201 on attempt 2", resp, err)
	}
	if w := rec.waits(); len(w) != 0 {
		t.Fatalf("waited %v before the next region; want no wait", w)
	}
	if n := g.executions(key); n != 1 {
		t.Fatalf("%d executions, want 1", n)
	}
	got := g.requests(key)[0]
	if got.Body != `{"amount":"1.00"}` || got.Auth != "Bearer tok" || got.ContentType != "application/json" {
		t.Fatalf("the next region received %+v; want the intent as given", got)
	}
}

// TestRefusalThatRanNothingMovesToTheNextRegionAtOnce: a 503
// region-unreachable (the region cannot reach the actor's owner; it names
// no operation) sends the same intent, same key, body and headers, to the
// next region at once.
func TestRefusalThatRanNothingMovesToTheNextRegionAtOnce(t *testing.T) {
	a, b := newGateway(), newGateway()
	a.failFirst, a.failStatus = 100, http.StatusServiceUnavailable
	a.kind = "region-unreachable"
	c, rec := multiRegion(t, client.Region{URL: serve(t, a)}, client.Region{URL: serve(t, b)})
	key := client.NewKey()
	resp, err := c.PostJSON(t.Context(), "/v1/payments", key, payment{Amount: 2})
	if err != nil || resp.Status != http.StatusCreated || resp.Attempts != 2 {
		t.Fatalf("Do = %+v, %v; want 201 on attempt 2", resp, err)
	}
	if w := rec.waits(); len(w) != 0 {
		t.Fatalf("waited %v; want the next region at once", w)
	}
	sameIntent(t, a.requests(key)[0], b.requests(key)[0])
}

// TestRegionFailoverRefusalIsRetriedAfterItsRetryAfter: a 503
// region-failover is the endpoint's policy about the actor's region, the
// same answer everywhere: the retry honours Retry-After instead of
// switching at once.
func TestRegionFailoverRefusalIsRetriedAfterItsRetryAfter(t *testing.T) {
	a := &scripted{answers: []func(http.ResponseWriter){refusal("region-failover", "2"), created("", "op-1")}}
	b := &scripted{answers: []func(http.ResponseWriter){created("", "op-1")}}
	c, rec := multiRegion(t, client.Region{URL: serve(t, a)}, client.Region{URL: serve(t, b)})
	if _, err := c.PostJSON(t.Context(), "/v1/payments", client.NewKey(), payment{}); err != nil {
		t.Fatal(err)
	}
	if w := rec.waits(); len(w) != 1 || w[0] < 2*time.Second {
		t.Fatalf("waits = %v; want one of at least the Retry-After 2s", w)
	}
}

// TestA503NamingAnOperationIsRetriedWhereItIs: a 503 that names an
// operation comes from the owner, which holds the intent's record: the
// retry goes back there after the wait, never at once elsewhere.
func TestA503NamingAnOperationIsRetriedWhereItIs(t *testing.T) {
	owner503 := func(w http.ResponseWriter) {
		w.Header().Set("X-Idempotency-Operation-Id", "op-1")
		problem(w, http.StatusServiceUnavailable, "upstream-unavailable", "op-1", "IN_PROGRESS", false)
	}
	a := &scripted{answers: []func(http.ResponseWriter){owner503, created("", "op-1")}}
	b := &scripted{answers: []func(http.ResponseWriter){created("", "op-1")}}
	c, rec := multiRegion(t, client.Region{URL: serve(t, a)}, client.Region{URL: serve(t, b)})
	if _, err := c.PostJSON(t.Context(), "/v1/payments", client.NewKey(), payment{}); err != nil {
		t.Fatal(err)
	}
	if a.count() != 2 || b.count() != 0 || len(rec.waits()) != 1 {
		t.Fatalf("first region %d requests, second %d, waits %v; want 2, 0 and one wait", a.count(), b.count(), rec.waits())
	}
}

// TestLastAnswersOwnerIsTriedFirst: an answer that us-east relayed from
// eu-west (X-Idempotency-Region: eu-west, with an operation) makes eu-west
// the first region of the next intent, saving the forwarding hop.
func TestLastAnswersOwnerIsTriedFirst(t *testing.T) {
	us := &scripted{answers: []func(http.ResponseWriter){created("eu-west", "op-1")}}
	eu := &scripted{answers: []func(http.ResponseWriter){created("eu-west", "op-2")}}
	c, _ := multiRegion(t, client.Region{Name: "us-east", URL: serve(t, us)}, client.Region{Name: "eu-west", URL: serve(t, eu)})
	for range 3 {
		if _, err := c.PostJSON(t.Context(), "/v1/payments", client.NewKey(), payment{}); err != nil {
			t.Fatal(err)
		}
	}
	if us.count() != 1 || eu.count() != 2 {
		t.Fatalf("us-east got %d intents, eu-west %d; want 1 then 2 straight to the owner", us.count(), eu.count())
	}
}

// TestSwitchesBeyondTheBudgetWaitTheBackoff: a region that refuses
// everything costs an immediate second attempt only while the switch
// budget lasts (five in a burst); after that the next region is reached
// after a backoff wait, so the refusing region does not double the load.
func TestSwitchesBeyondTheBudgetWaitTheBackoff(t *testing.T) {
	a := &scripted{answers: []func(http.ResponseWriter){refusal("ownership-moving", "")}}
	b := &scripted{answers: []func(http.ResponseWriter){created("", "op")}}
	c, rec := multiRegion(t, client.Region{URL: serve(t, a)}, client.Region{URL: serve(t, b)})
	for i := range 6 {
		if _, err := c.PostJSON(t.Context(), "/v1/payments", client.NewKey(), payment{}); err != nil {
			t.Fatal(err)
		}
		want := 0
		if i == 5 {
			want = 1
		}
		if w := rec.waits(); len(w) != want {
			t.Fatalf("intent %d: waits %v; want %d", i+1, w, want)
		}
	}
}

// TestAttemptThatSentNothingLeavesTheFinalAnswerUnambiguous: a refused
// connection proves the intent did not run there, so the next region's
// final 401 with new_key_safe stays a plain final answer (the caller may
// start over under a new key), not the "outcome unknown" of an attempt
// that may have run.
func TestAttemptThatSentNothingLeavesTheFinalAnswerUnambiguous(t *testing.T) {
	unauthorized := func(w http.ResponseWriter) {
		problem(w, http.StatusUnauthorized, "unauthorized", "", "", true)
	}
	b := &scripted{answers: []func(http.ResponseWriter){unauthorized}}
	c, _ := multiRegion(t, client.Region{URL: deadURL(t)}, client.Region{URL: serve(t, b)})
	_, err := c.PostJSON(t.Context(), "/v1/payments", client.NewKey(), payment{})
	var pe *client.ProblemError
	if !errors.As(err, &pe) || !pe.NewKeySafe || errors.Is(err, client.ErrGaveUp) {
		t.Fatalf("PostJSON = %v; want the 401 with NewKeySafe, not ErrGaveUp", err)
	}
}
