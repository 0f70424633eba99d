package client_test

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/client"
	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/internal/testutil"
)

// flakyTransport fails the first failures round trips with err (or, with
// inBody, fails reading their bodies) and answers 201 after, recording the
// key and body of each.
type flakyTransport struct {
	failures int
	err      error
	inBody   bool

	mu    sync.Mutex
	calls []seenRequest
}

func (f *flakyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	f.mu.Lock()
	f.calls = append(f.calls, seenRequest{KeyHeader: r.Header.Get("Idempotency-Key"), Body: string(b), ContentType: r.Header.Get("Content-Type")})
	n := len(f.calls)
	f.mu.Unlock()
	res := &http.Response{StatusCode: 201, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(`{}`)), Request: r}
	if n > f.failures {
		return res, nil
	}
	if f.inBody {
		res.Body = io.NopCloser(io.MultiReader(strings.NewReader(`{"par`), errReader{f.err}))
		return res, nil
	}
	return nil, f.err
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// timeoutError is a net.Error that timed out, as a dial or read deadline
// gives.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func TestDoTransportErrors(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		inBody    bool
		wantRetry bool
	}{
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, false, true},
		{"connection reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, false, true},
		{"EOF", io.EOF, false, true},
		{"attempt timeout", &net.OpError{Op: "read", Net: "tcp", Err: timeoutError{}}, false, true},
		{"DNS failure", &net.DNSError{Err: "server misbehaving", Name: "api.example", IsTemporary: true}, false, true},
		{"reset while reading the body", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, true, true},
		{"unexpected EOF in the body", io.ErrUnexpectedEOF, true, true},
		{"unknown certificate authority", x509.UnknownAuthorityError{}, false, false},
		{"wrong host in certificate", x509.HostnameError{Host: "api.example", Certificate: &x509.Certificate{}}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := &flakyTransport{failures: 2, err: tt.err, inBody: tt.inBody}
			rec := newSleepRecorder()
			c, err := client.New(client.Config{BaseURL: "http://api.example", HTTPClient: &http.Client{Transport: ft}, Clock: rec})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.Do(t.Context(), client.Intent{Method: "POST", Path: "/v1/x", Key: "k", Body: []byte(`{"a":1}`)})
			wantCalls := 1
			if tt.wantRetry {
				wantCalls = 3
				if err != nil || resp.Attempts != 3 {
					t.Fatalf("Do = %+v, %v; want success on attempt 3", resp, err)
				}
			} else if err == nil || errors.Is(err, client.ErrGaveUp) || !errors.Is(err, tt.err) {
				t.Fatalf("Do error = %v; want %v itself, not ErrGaveUp", err, tt.err)
			}
			var want []seenRequest
			for range wantCalls {
				want = append(want, seenRequest{KeyHeader: `"k"`, Body: `{"a":1}`, ContentType: "application/json"})
			}
			if diff := cmp.Diff(want, ft.calls); diff != "" {
				t.Errorf("round trips (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDoRetriesConnectionRefusedUntilGivingUp(t *testing.T) {
	addr := testutil.RefusingAddr(t) // nothing listens there
	rec := newSleepRecorder()
	c, err := client.New(client.Config{BaseURL: "http://" + addr, MaxAttempts: 3, Clock: rec})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(t.Context(), client.Intent{Method: "POST", Path: "/x", Key: "k"})
	// No attempt was ever written: the give-up says nothing ran, not
	// that the outcome is unknown.
	if resp != nil || !errors.Is(err, client.ErrNotExecuted) || errors.Is(err, client.ErrGaveUp) ||
		!errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Do = %v, %v; want nil and ErrNotExecuted wrapping ECONNREFUSED", resp, err)
	}
	if n := len(rec.waits()); n != 2 {
		t.Errorf("waited %d times; want 2", n)
	}
}

func TestDoStopsWhenContextEnds(t *testing.T) {
	t.Run("already done: nothing sent", func(t *testing.T) {
		g := newGateway()
		c, _ := startGateway(t, g, nil)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := c.PostJSON(ctx, "/v1/payments", "k", payment{})
		if !errors.Is(err, context.Canceled) || errors.Is(err, client.ErrGaveUp) {
			t.Errorf("error = %v; want context.Canceled and not ErrGaveUp", err)
		}
		if n := len(g.requests("k")); n != 0 {
			t.Errorf("gateway saw %d requests; want 0", n)
		}
	})
	t.Run("canceled while waiting to retry", func(t *testing.T) {
		g := newGateway()
		g.failFirst, g.failStatus = 1000, 409
		ctx, cancel := context.WithCancel(t.Context())
		c, _ := startGateway(t, g, func(cfg *client.Config) {
			cfg.Clock = cancelOnWait{Fake: clock.NewFake(testEpoch), cancel: cancel}
		})
		resp, err := c.PostJSON(ctx, "/v1/payments", "k", payment{})
		var pe *client.ProblemError
		if !errors.Is(err, client.ErrGaveUp) || !errors.Is(err, context.Canceled) || !errors.As(err, &pe) || pe.Status != 409 {
			t.Errorf("error = %v; want ErrGaveUp wrapping context.Canceled and the 409", err)
		}
		if resp == nil || resp.Status != 409 {
			t.Errorf("Response = %+v; want the last 409", resp)
		}
		if n := len(g.requests("k")); n != 1 {
			t.Errorf("gateway saw %d requests; want 1", n)
		}
	})
	t.Run("deadline during an attempt is not retried", func(t *testing.T) {
		g := newGateway()
		g.block = make(chan struct{})
		c, rec := startGateway(t, g, nil)
		t.Cleanup(func() { close(g.block) }) // runs before the server closes
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		resp, err := c.PostJSON(ctx, "/v1/payments", "k", payment{})
		if resp != nil || !errors.Is(err, client.ErrGaveUp) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Do = %v, %v; want nil and ErrGaveUp wrapping DeadlineExceeded", resp, err)
		}
		if n, w := len(g.requests("k")), len(rec.waits()); n != 1 || w != 0 {
			t.Errorf("gateway saw %d requests after %d waits; want 1 and 0", n, w)
		}
	})
}

// cancelOnWait is a fake clock that cancels the caller's context as soon
// as Do starts to wait, and never moves.
type cancelOnWait struct {
	*clock.Fake
	cancel context.CancelFunc
}

func (c cancelOnWait) NewTimer(d time.Duration) clock.Timer {
	c.cancel()
	return c.Fake.NewTimer(d)
}

// TestGivingUpOnRejectPolicyRefusalsSaysNothingWasExecuted: a client that
// runs out of attempts while the endpoint's reject policy answers 503
// region-failover (the gateway refuses before claiming the key) gets a
// *NotExecutedError saying nothing was executed, never "outcome unknown";
// once an earlier attempt may have run (its connection dropped after the
// request was written), the same refusals end in a *GaveUpError.
func TestGivingUpOnRejectPolicyRefusalsSaysNothingWasExecuted(t *testing.T) {
	dropAfterRead := func(w http.ResponseWriter) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}
	tests := []struct {
		name         string
		answers      []func(http.ResponseWriter)
		wantExecuted bool // the outcome is open: ErrGaveUp
	}{
		{name: "every attempt refused by the reject policy",
			answers: []func(http.ResponseWriter){refusal("region-failover", "1")}},
		{name: "rate limited, then refused by the reject policy",
			answers: []func(http.ResponseWriter){func(w http.ResponseWriter) {
				problem(w, http.StatusTooManyRequests, "rate-limited", "", "", false)
			}, refusal("region-failover", "1")}},
		{name: "an attempt whose answer was lost, then refusals",
			answers:      []func(http.ResponseWriter){dropAfterRead, refusal("region-failover", "1")},
			wantExecuted: true},
		{name: "a 503 that is no gateway's problem document",
			answers: []func(http.ResponseWriter){func(w http.ResponseWriter) {
				w.WriteHeader(http.StatusServiceUnavailable)
			}},
			wantExecuted: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &scripted{answers: tt.answers}
			c, err := client.New(client.Config{BaseURL: serve(t, s), MaxAttempts: 3, Clock: newSleepRecorder(), Token: "tok",
				HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Do(t.Context(), client.Intent{Method: "POST", Path: "/v1/payments", Key: client.NewKey(), Body: []byte(`{}`)})
			var ne *client.NotExecutedError
			var gu *client.GaveUpError
			switch {
			case tt.wantExecuted && (!errors.As(err, &gu) || errors.Is(err, client.ErrNotExecuted) ||
				!strings.Contains(err.Error(), "outcome unknown")):
				t.Errorf("Do error = %v; want a *GaveUpError saying the outcome is unknown", err)
			case !tt.wantExecuted && (!errors.As(err, &ne) || errors.Is(err, client.ErrGaveUp) ||
				strings.Contains(err.Error(), "unknown") || !strings.Contains(err.Error(), "nothing was executed")):
				t.Errorf("Do error = %v; want a *NotExecutedError saying nothing was executed", err)
			}
			if s.count() != 3 {
				t.Errorf("%d attempts; want 3", s.count())
			}
		})
	}
}
