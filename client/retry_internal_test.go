package client

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestFormatKey(t *testing.T) {
	tests := []struct{ key, want string }{
		{"abc", `"abc"`},
		{"with space", `"with space"`},
		{`a"b`, `"a\"b"`},
		{`a\b`, `"a\\b"`},
		{`\"`, `"\\\""`},
		{"8e03978e-40d5-43e8-bc93-6894a57f9324", `"8e03978e-40d5-43e8-bc93-6894a57f9324"`},
	}
	for _, tt := range tests {
		if got := formatKey(tt.key); got != tt.want {
			t.Errorf("formatKey(%q) = %s; want %s", tt.key, got, tt.want)
		}
	}
}

func TestCheckKey(t *testing.T) {
	tests := []struct {
		name string
		key  string
		ok   bool
	}{
		{"one byte", "k", true},
		{"longest", strings.Repeat("k", MaxKeyLen), true},
		{"space and quotes", ` a "b" \c `, true},
		{"empty", "", false},
		{"too long", strings.Repeat("k", MaxKeyLen+1), false},
		{"tab", "a\tb", false},
		{"DEL", "a\x7fb", false},
		{"non-ASCII", "ké", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkKey(tt.key)
			if (err == nil) != tt.ok {
				t.Errorf("checkKey = %v; want ok=%v", err, tt.ok)
			}
			if err != nil && tt.key != "" && strings.Contains(err.Error(), tt.key) {
				t.Errorf("error %q reveals the key", err)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{" 7 ", 7 * time.Second, true},
		{"60", 60 * time.Second, true},
		{"61", MaxRetryWait, true},
		{"99999999999999999999999", MaxRetryWait, true},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"Sun, 01 Nov 2026 12:00:30 GMT", 30 * time.Second, true},
		{"Sunday, 01-Nov-26 12:00:05 GMT", 5 * time.Second, true},
		{"Sun, 01 Nov 2026 11:00:00 GMT", 0, true},
		{"tomorrow", 0, false},
	}
	for _, tt := range tests {
		d, ok := parseRetryAfter(tt.in, now)
		if d != tt.want || ok != tt.wantOK {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, d, ok, tt.want, tt.wantOK)
		}
	}
}

func newTestClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	cfg.BaseURL = "http://api.example"
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestBackoffIsCappedExponentialWithFullJitter(t *testing.T) {
	c := newTestClient(t, Config{BaseDelay: 100 * time.Millisecond, MaxDelay: 1 * time.Second, Seed: 7})
	for attempt := 1; attempt <= 40; attempt++ {
		ceiling := min(100*time.Millisecond<<min(attempt-1, 20), time.Second)
		var lo, hi time.Duration = time.Hour, 0
		for range 500 {
			d := c.backoff(attempt)
			lo, hi = min(lo, d), max(hi, d)
		}
		// Full jitter: the draws span [0, ceiling], not a band near it.
		if lo < 0 || hi > ceiling || lo > ceiling/10 || hi < ceiling*9/10 {
			t.Errorf("attempt %d: draws in [%v, %v]; want spread over [0, %v]", attempt, lo, hi, ceiling)
		}
	}
}

func TestBackoffIsRepeatableForASeed(t *testing.T) {
	draw := func(seed uint64) []time.Duration {
		c := newTestClient(t, Config{Seed: seed})
		var out []time.Duration
		for attempt := 1; attempt <= 8; attempt++ {
			out = append(out, c.backoff(attempt))
		}
		return out
	}
	if diff := cmp.Diff(draw(42), draw(42)); diff != "" {
		t.Errorf("same seed, different waits (-first +second):\n%s", diff)
	}
	if cmp.Equal(draw(42), draw(43)) {
		t.Error("seeds 42 and 43 gave the same waits")
	}
}

func TestWaitTakesTheLargerAndCaps(t *testing.T) {
	c := newTestClient(t, Config{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond, Seed: 1})
	tests := []struct {
		retryAfter time.Duration
		lo, hi     time.Duration
	}{
		{0, 0, time.Millisecond},
		{2 * time.Second, 2 * time.Second, 2 * time.Second},
		{10 * time.Minute, MaxRetryWait, MaxRetryWait},
	}
	for _, tt := range tests {
		if got := c.wait(3, tt.retryAfter); got < tt.lo || got > tt.hi {
			t.Errorf("wait(3, %v) = %v; want in [%v, %v]", tt.retryAfter, got, tt.lo, tt.hi)
		}
	}
}

func TestNewProblem(t *testing.T) {
	problemJSON := http.Header{"Content-Type": {"application/problem+json; charset=utf-8"}}
	tests := []struct {
		name         string
		resp         Response
		want         ProblemError
		wantMismatch bool
		wantText     string
	}{
		{
			name: "gateway 409",
			resp: Response{Status: 409, Header: problemJSON, Body: []byte(`{"type":"https://idemcoord.dev/problems/in-progress","title":"operation in progress","status":409,"detail":"another request with this key is being processed","operation_id":"7d0c","operation_state":"IN_PROGRESS","new_key_safe":false}`)},
			want: ProblemError{Type: "https://idemcoord.dev/problems/in-progress", Title: "operation in progress", Status: 409,
				Detail: "another request with this key is being processed", OperationID: "7d0c", OperationState: "IN_PROGRESS"},
			wantText: "client: 409 operation in progress: another request with this key is being processed (operation IN_PROGRESS)",
		},
		{
			name:         "gateway 422 mismatch",
			resp:         Response{Status: 422, Header: problemJSON, Body: []byte(`{"type":"https://idemcoord.dev/problems/fingerprint-mismatch","title":"fingerprint mismatch","new_key_safe":true}`)},
			want:         ProblemError{Type: "https://idemcoord.dev/problems/fingerprint-mismatch", Title: "fingerprint mismatch", Status: 422, NewKeySafe: true},
			wantMismatch: true,
			wantText:     "client: 422 fingerprint mismatch",
		},
		{
			name:         "bare 422 without an operation is the gateway's",
			resp:         Response{Status: 422, Header: http.Header{}, Body: []byte("card number 4111 1111 1111 1111 rejected")},
			want:         ProblemError{Title: "Unprocessable Entity", Status: 422},
			wantMismatch: true,
			wantText:     "client: 422 Unprocessable Entity",
		},
		{
			name:     "bare 422 of a replayed operation is the upstream's",
			resp:     Response{Status: 422, Header: http.Header{}, Body: []byte("card number 4111 1111 1111 1111 rejected"), Replayed: true, OperationID: "op-9"},
			want:     ProblemError{Title: "Unprocessable Entity", Status: 422, OperationID: "op-9", fromOperation: true},
			wantText: "client: 422 Unprocessable Entity",
		},
		{
			name:     "problem+json that does not parse falls back",
			resp:     Response{Status: 503, Header: problemJSON, Body: []byte(`<html>bad gateway</html>`), OperationID: "op-3"},
			want:     ProblemError{Title: "Service Unavailable", Status: 503, OperationID: "op-3", fromOperation: true},
			wantText: "client: 503 Service Unavailable",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := newProblem(&tt.resp)
			tt.want.Body = tt.resp.Body
			if diff := cmp.Diff(&tt.want, got, cmp.AllowUnexported(ProblemError{})); diff != "" {
				t.Errorf("newProblem (-want +got):\n%s", diff)
			}
			if m := got.Is(ErrFingerprintMismatch); m != tt.wantMismatch {
				t.Errorf("Is(ErrFingerprintMismatch) = %v; want %v", m, tt.wantMismatch)
			}
			if got.Error() != tt.wantText {
				t.Errorf("Error() = %q; want %q", got.Error(), tt.wantText)
			}
		})
	}
}

// TestADownstreamWindowRefusalIsFinal: the gateway's 409
// downstream-window-passed is not retried (nothing changes until an
// operator settles the operation), while any other 409 still is; a 422's
// changed_members are read into the ProblemError.
func TestADownstreamWindowRefusalIsFinal(t *testing.T) {
	problem := func(status int, body string) *Response {
		return &Response{Status: status, Header: http.Header{"Content-Type": {"application/problem+json"}}, Body: []byte(body)}
	}
	window := problem(409, `{"type":"https://idemcoord.dev/problems/downstream-window-passed","status":409,"new_key_safe":false}`)
	inProgress := problem(409, `{"type":"https://idemcoord.dev/problems/in-progress","status":409}`)
	if retryableStatus(window) || !retryableStatus(inProgress) {
		t.Errorf("retryable: downstream-window-passed %v, in-progress %v; want false, true",
			retryableStatus(window), retryableStatus(inProgress))
	}
	mismatch := problem(422, `{"type":"https://idemcoord.dev/problems/fingerprint-mismatch","changed_members":["/amount"]}`)
	if got := newProblem(mismatch).ChangedMembers; !cmp.Equal(got, []string{"/amount"}) {
		t.Errorf("ChangedMembers = %q, want [/amount]", got)
	}
}
