package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/store"
)

// firstSentPost is a POST of create-thing under key with an
// Idempotency-First-Sent of at ("" for none).
func firstSentPost(t *testing.T, url, auth, key, at string) *http.Request {
	r := post(t, url+"/v1/things", auth, key, `{"amount":5}`)
	if at != "" {
		r.Header.Set(gateway.HeaderFirstSent, at)
	}
	return r
}

func httpDate(t time.Time) string { return t.UTC().Format(http.TimeFormat) }

// TestAFirstSentOlderThanTheTTLIsRefusedAndNothingRuns: an intent first
// sent longer ago than the endpoint's ttl less the skew allowance (its
// record may be gone), or further in the future than the skew allowance,
// is 412 with a problem
// naming why; nothing runs and no record is made. A first-sent within
// the window runs as usual.
func TestAFirstSentOlderThanTheTTLIsRefusedAndNothingRuns(t *testing.T) {
	s, fake := clockedStore(t, 8)
	var runs atomic.Int64
	_, srv := serveClocked(t, s, fake, "    ttl: 1h\n    lease: 30s\n", countingHandler(&runs))
	alice := token(t, "alice")
	now := fake.Now()
	for _, tc := range []struct {
		name, key, at string
		want          int
		problem       string
	}{
		{"older than the ttl", "old-1", httpDate(now.Add(-61 * time.Minute)), http.StatusPreconditionFailed, "first-sent-expired"},
		{"within the ttl, not by the skew", "old-3", httpDate(now.Add(-59*time.Minute - 30*time.Second)), http.StatusPreconditionFailed, "first-sent-expired"},
		{"a day old (RFC 850 form)", "old-2", now.Add(-24 * time.Hour).UTC().Format(time.RFC850), http.StatusPreconditionFailed, "first-sent-expired"},
		{"in the future beyond the skew", "future-1", httpDate(now.Add(5 * time.Minute)), http.StatusPreconditionFailed, "first-sent-in-future"},
		{"not a date", "bad-1", "yesterday", http.StatusBadRequest, "invalid-first-sent"},
		{"a Unix time", "bad-2", "1764587000", http.StatusBadRequest, "invalid-first-sent"},
	} {
		st, hd, b := do(t, firstSentPost(t, srv.URL, alice, tc.key, tc.at))
		if st != tc.want || !strings.Contains(b, tc.problem) || hd.Get(gateway.HeaderKeyStatus) != gateway.KeyStatusRejected {
			t.Errorf("%s: %s, want %d %s", tc.name, describe(st, hd, b), tc.want, tc.problem)
		}
		if _, err := s.Read(context.Background(), reviewScope(t, "alice", tc.key)); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: the key has a record (%v), want none", tc.name, err)
		}
	}
	if n := runs.Load(); n != 0 {
		t.Errorf("upstream ran %d times, want never", n)
	}
	for i, at := range []string{httpDate(now.Add(-58 * time.Minute)), httpDate(now.Add(30 * time.Second))} {
		if st, hd, b := do(t, firstSentPost(t, srv.URL, alice, fmt.Sprintf("ok-%d", i), at)); st != http.StatusCreated {
			t.Errorf("first sent %s: %s, want 201", at, describe(st, hd, b))
		}
	}
}

// TestAnotherFirstSentUnderTheSameKeyIsAnotherRequest: retries that send
// the first attempt's time, or none, replay it; a retry naming another
// first-sent time is another request (422) and runs nothing. A first
// attempt that sent none is replayed to a retry that sends one.
func TestAnotherFirstSentUnderTheSameKeyIsAnotherRequest(t *testing.T) {
	s, fake := clockedStore(t, 8)
	var runs atomic.Int64
	_, srv := serveClocked(t, s, fake, "    lease: 30s\n", countingHandler(&runs))
	alice := token(t, "alice")
	t0 := httpDate(fake.Now().Add(-10 * time.Second))
	if st, hd, b := do(t, firstSentPost(t, srv.URL, alice, "fs-1", t0)); st != http.StatusCreated {
		t.Fatalf("first: %s", describe(st, hd, b))
	}
	fake.Advance(time.Minute)
	for _, tc := range []struct {
		name, key, at string
		want          int
		replayed      string
	}{
		{"same first-sent", "fs-1", t0, http.StatusCreated, "true"},
		{"no first-sent", "fs-1", "", http.StatusCreated, "true"},
		{"another first-sent", "fs-1", httpDate(fake.Now().Add(-5 * time.Second)), http.StatusUnprocessableEntity, ""},
	} {
		st, hd, b := do(t, firstSentPost(t, srv.URL, alice, tc.key, tc.at))
		if st != tc.want || hd.Get(gateway.HeaderReplayed) != tc.replayed {
			t.Errorf("%s: %s, want %d replayed %q", tc.name, describe(st, hd, b), tc.want, tc.replayed)
		}
	}
	if st, hd, b := do(t, firstSentPost(t, srv.URL, alice, "fs-2", "")); st != http.StatusCreated {
		t.Fatalf("first without first-sent: %s", describe(st, hd, b))
	}
	if st, hd, b := do(t, firstSentPost(t, srv.URL, alice, "fs-2", httpDate(fake.Now()))); st != http.StatusCreated ||
		hd.Get(gateway.HeaderReplayed) != "true" {
		t.Errorf("retry with a first-sent after a first attempt without: %s, want the replay", describe(st, hd, b))
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("upstream ran %d times, want twice (fs-1 and fs-2 once each)", n)
	}
}

// TestAnAcceptedFirstSentNeverOutlivesTheRecordItCouldHaveMade: a client
// whose clock runs ahead by almost the skew the guard tolerates (55 s,
// lease 30 s) has its intent run and recorded; once the store has swept
// the record (claim + lease + ttl on the store's clock), a retry with the
// same key and first-sent time is refused 412, never run a second time.
// The guard's window must end before any record the first attempt could
// have made: that record was claimed no earlier than first-sent minus the
// skew the guard let through.
func TestAnAcceptedFirstSentNeverOutlivesTheRecordItCouldHaveMade(t *testing.T) {
	ctx := context.Background()
	s, fake := clockedStore(t, 8)
	var runs atomic.Int64
	_, srv := serveClocked(t, s, fake, "    ttl: 1h\n    lease: 30s\n", countingHandler(&runs))
	alice := token(t, "alice")
	claimed := fake.Now()
	at := httpDate(claimed.Add(55 * time.Second))
	if st, hd, b := do(t, firstSentPost(t, srv.URL, alice, "ahead-1", at)); st != http.StatusCreated {
		t.Fatalf("first attempt: %s, want 201", describe(st, hd, b))
	}
	rec, err := s.Read(ctx, reviewScope(t, "alice", "ahead-1"))
	if err != nil {
		t.Fatal(err)
	}
	// Every instant from the record's end on (swept at once, on the store's
	// clock) up to the end of what the guard could accept.
	fake.Set(rec.ExpiresAt)
	if _, err := s.Cleanup(ctx, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(ctx, reviewScope(t, "alice", "ahead-1")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the record outlived its expires_at %s: %v", rec.ExpiresAt, err)
	}
	for _, after := range []time.Duration{0, 10 * time.Second, 25 * time.Second, 35 * time.Second} {
		fake.Set(rec.ExpiresAt.Add(after))
		st, hd, b := do(t, firstSentPost(t, srv.URL, alice, "ahead-1", at))
		if st != http.StatusPreconditionFailed || !strings.Contains(b, "first-sent-expired") {
			t.Errorf("retry %s after the sweep: %s, want 412 first-sent-expired", after, describe(st, hd, b))
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("upstream ran %d times, want once", n)
	}
}

// TestALoweredTTLNeverAdmitsARetryAfterTheRecordIsGone: a key claimed
// while its endpoint kept keys 2h, retried by a client 55 s ahead after
// the endpoint's ttl was lowered to 1h and the record was swept, is
// refused 412: the record kept the life it was claimed with, and the
// guard's window under the lower ttl ends before it.
func TestALoweredTTLNeverAdmitsARetryAfterTheRecordIsGone(t *testing.T) {
	ctx := context.Background()
	s, fake := clockedStore(t, 8)
	var runs atomic.Int64
	_, before := serveClocked(t, s, fake, "    ttl: 2h\n    lease: 30s\n", countingHandler(&runs))
	_, after := serveClocked(t, s, fake, "    ttl: 1h\n    lease: 30s\n", countingHandler(&runs))
	alice := token(t, "alice")
	at := httpDate(fake.Now().Add(55 * time.Second))
	if st, hd, b := do(t, firstSentPost(t, before.URL, alice, "lowered-1", at)); st != http.StatusCreated {
		t.Fatalf("first attempt: %s, want 201", describe(st, hd, b))
	}
	rec, err := s.Read(ctx, reviewScope(t, "alice", "lowered-1"))
	if err != nil {
		t.Fatal(err)
	}
	fake.Set(rec.ExpiresAt)
	if _, err := s.Cleanup(ctx, 100); err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{0, time.Minute, time.Hour} {
		fake.Set(rec.ExpiresAt.Add(d))
		if st, hd, b := do(t, firstSentPost(t, after.URL, alice, "lowered-1", at)); st != http.StatusPreconditionFailed {
			t.Errorf("retry %s after the sweep under the lowered ttl: %s, want 412", d, describe(st, hd, b))
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("upstream ran %d times, want once", n)
	}
}
