package client_test

import (
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/idemcoord/idemcoord/client"
)

// review2Script answers round trip i with steps[i]: an error, or a
// response built from status, content type and body.
type review2Script struct {
	mu    sync.Mutex
	n     int
	steps []func(r *http.Request) (*http.Response, error)
}

func (s *review2Script) RoundTrip(r *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	s.mu.Lock()
	i := s.n
	s.n++
	s.mu.Unlock()
	return s.steps[i](r)
}

func review2Fail(err error) func(*http.Request) (*http.Response, error) {
	return func(*http.Request) (*http.Response, error) { return nil, err }
}

func review2Answer(status int, ctype, body string) func(*http.Request) (*http.Response, error) {
	return func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {ctype}},
			Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	}
}

// resetAfterSend is what a caller sees when the gateway ran the intent and
// the connection broke before the answer arrived.
var resetAfterSend = &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}

// After an attempt whose outcome is unknown (reset after sending), a later
// final answer that says "nothing ran" about that later request only must
// not be passed on as "a new key is safe": the first attempt may have
// charged. Here the token expired during backoff and the gateway answers
// 401 with new_key_safe: true.
func TestNewKeyNeverSafeAfterAnAmbiguousAttempt(t *testing.T) {
	s := &review2Script{steps: []func(*http.Request) (*http.Response, error){
		review2Fail(resetAfterSend),
		review2Answer(401, "application/problem+json",
			`{"type":"https://idemcoord.dev/problems/unauthorized","title":"unauthorized","status":401,"new_key_safe":true}`),
	}}
	rec := newSleepRecorder()
	c, err := client.New(client.Config{BaseURL: "http://api.example", Token: "t", HTTPClient: &http.Client{Transport: s}, Clock: rec})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.PostJSON(t.Context(), "/v1/payments", client.NewKey(), map[string]string{"amount": "12.50"})
	var pe *client.ProblemError
	if errors.As(err, &pe) && pe.NewKeySafe && !errors.Is(err, client.ErrGaveUp) {
		t.Fatalf("Do after an ambiguous first attempt = %v with NewKeySafe=true and not ErrGaveUp: "+
			"a caller following NewKeySafe starts the intent again under a new key while attempt 1 may have run", err)
	}
}

// The same for a transport error that is not retried (a certificate
// rotated to one the client does not trust): after an ambiguous first
// attempt it must be a *GaveUpError (outcome unknown), as a TokenSource
// error is, not a plain error that reads as "nothing happened".
func TestFatalTransportErrorAfterAnAmbiguousAttemptIsGaveUp(t *testing.T) {
	s := &review2Script{steps: []func(*http.Request) (*http.Response, error){
		review2Fail(resetAfterSend),
		review2Fail(x509.UnknownAuthorityError{}),
	}}
	rec := newSleepRecorder()
	c, err := client.New(client.Config{BaseURL: "http://api.example", HTTPClient: &http.Client{Transport: s}, Clock: rec})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.PostJSON(t.Context(), "/v1/payments", client.NewKey(), map[string]string{"amount": "12.50"})
	if !errors.Is(err, client.ErrGaveUp) {
		t.Fatalf("Do error = %v; want ErrGaveUp: attempt 1 may have taken effect", err)
	}
}
