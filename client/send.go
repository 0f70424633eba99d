package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"
)

// send makes one attempt. A status other than 2xx/3xx returns both the
// Response and its *ProblemError; a transport failure, including one while
// reading the body, returns only the error. sent reports whether the
// request's head was written: until it is, the server cannot have acted
// on the request.
func (c *Client) send(ctx context.Context, reg *region, target string, in Intent, header http.Header, token string, attempt int) (resp *Response, sent bool, err error) {
	// A fresh reader over the same bytes for every attempt.
	// NewRequestWithContext sets ContentLength and GetBody for a
	// *bytes.Reader, so the transport can also rewind it on its own
	// internal retry.
	var body io.Reader
	if len(in.Body) > 0 {
		body = bytes.NewReader(in.Body)
	}
	var wrote atomic.Bool
	wait := c.answerWait(ctx, in, c.stallHealthz(reg))
	defer wait.stop()
	trace := &httptrace.ClientTrace{
		WroteHeaders: func() { wrote.Store(true) },
		WroteRequest: func(httptrace.WroteRequestInfo) { wait.arm() },
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(wait.ctx, trace), in.Method, target, body)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %w", ErrInvalidIntent, err)
	}
	req.Header = header.Clone()
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := c.cfg.HTTPClient.Do(req)
	inTime := wait.answered()
	if err != nil {
		if !inTime {
			// The timer struck, or the stall probe: the request was
			// written and no answer came, so the attempt may have run.
			if at, stalled, cutOff := wait.stalledAt(); cutOff {
				return nil, true, fmt.Errorf("%w: the region is cut off from etcd (its /healthz says so, %v after the request was written; its shards are about to move): %w",
					ErrNoAnswerInTime, at, err)
			} else if stalled {
				return nil, true, fmt.Errorf("%w: the region stalled (its /healthz did not answer within %v, %v after the request was written): %w",
					ErrNoAnswerInTime, stallProbeTimeout, at, err)
			}
			return nil, true, fmt.Errorf("%w (%v after the request was written): %w", ErrNoAnswerInTime, wait.d, err)
		}
		return nil, wrote.Load() || !unsent(err), err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, true, fmt.Errorf("client: reading %d response: %w", res.StatusCode, err)
	}
	resp = newResponse(res, b, attempt)
	if resp.Status >= 200 && resp.Status < 400 {
		return resp, true, nil
	}
	return resp, true, newProblem(resp)
}

// answerWait is one attempt's response-header timeout, and its stall
// probe: armed when the request is written, disarmed when the answer's
// headers arrive. It runs on the wall clock, as the transport's own dial
// and read timeouts do: it guards against a real process or link that
// stopped, while Config.Clock paces the waits between attempts (tests
// that move a fake clock to skip a backoff must not also strike every
// attempt).
//
// The stall probe (Config.StallProbe) asks the region's /healthz, every
// StallProbe while no answer has come, whether its process still runs.
// A process that is paused or frozen keeps its connections open, and
// without the probe the attempt would wait the whole response-header
// timeout (the upstream timeout plus DefaultAnswerSlack, 12 s at the
// defaults). A /healthz that does not answer within stallProbeTimeout
// ends the attempt as the timeout would, and so does one that answers
// that its process cannot reach etcd (healthzEtcd: its liveness lease is
// going, its shards are about to move, and a run it holds waits on a
// store or etcd call that may never answer, its result fenced once they
// move). Any other answer, whatever its status, leaves it waiting: a live
// region may take the whole upstream timeout.
type answerWait struct {
	ctx    context.Context
	d      time.Duration
	cancel context.CancelFunc

	// stall is Config.StallProbe (0: no probe), healthz the region's
	// /healthz, hc the client that asks it.
	stall   time.Duration
	healthz string
	hc      *http.Client

	mu        sync.Mutex
	timer     *time.Timer
	probe     *time.Timer
	armed     time.Time
	struck    bool          // the timer or the stall probe fired before the answer
	stalledIn time.Duration // > 0: the stall probe struck, this long after the request was written
	cutOff    bool          // the stall probe struck on an answer that the region cannot reach etcd
	ended     bool          // answered or stopped: arm does nothing
}

// stallHealthz is the /healthz the stall probe of an attempt sent to reg
// asks, "" for none: over one URL (one region, or an entry in front of
// them all) the retry could only go where it went, and a load balancer
// would answer /healthz from another backend.
func (c *Client) stallHealthz(reg *region) string {
	if len(c.regions.list) < 2 {
		return ""
	}
	return reg.healthz
}

// stallProbeTimeout bounds one stall probe: a running gateway answers
// /healthz (no store, no etcd) within milliseconds.
const stallProbeTimeout = 500 * time.Millisecond

// healthzEtcd is the header of a gateway's /healthz answer that says,
// with the value healthzEtcdUnreachable, that its process cannot reach
// etcd (docs/http-contract.md, service endpoints).
const (
	healthzEtcd            = "Idemcoord-Etcd"
	healthzEtcdUnreachable = "unreachable"
)

// answerWait returns the response-header timeout of one attempt of in:
// Config.ResponseHeaderTimeout, else the intent's upstream timeout plus
// DefaultAnswerSlack; off (never strikes) when it is negative. Its stall
// probe asks healthz.
func (c *Client) answerWait(ctx context.Context, in Intent, healthz string) *answerWait {
	d := c.cfg.ResponseHeaderTimeout
	if d == 0 {
		up := in.UpstreamTimeout
		if up == 0 {
			up = c.cfg.UpstreamTimeout
		}
		d = up + DefaultAnswerSlack
	}
	w := &answerWait{ctx: ctx, d: d, cancel: func() {}, healthz: healthz, hc: c.cfg.HTTPClient}
	if st := c.cfg.StallProbe; st > 0 && healthz != "" && (d <= 0 || st+stallProbeTimeout < d) {
		w.stall = st
	}
	if d > 0 || w.stall > 0 {
		w.ctx, w.cancel = context.WithCancel(ctx)
	}
	return w
}

// arm starts the timer, and the stall probe's, once the request is
// written.
func (w *answerWait) arm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended || !w.armed.IsZero() {
		return
	}
	w.armed = time.Now()
	if w.d > 0 {
		w.timer = time.AfterFunc(w.d, func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			if !w.ended {
				w.struck = true
				w.cancel()
			}
		})
	}
	if w.stall > 0 {
		w.probe = time.AfterFunc(w.stall, w.probeStall)
	}
}

// probeStall asks the region's /healthz whether its process runs: no
// answer within stallProbeTimeout ends the attempt; an answer leaves it
// waiting, and the next probe is StallProbe later.
func (w *answerWait) probeStall() {
	// No key, token, body or value of the attempt goes with it.
	ctx, cancel := context.WithTimeout(context.Background(), stallProbeTimeout)
	defer cancel()
	alive, cutOff := false, false
	if req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.healthz, nil); err == nil {
		if res, err := w.hc.Do(req); err == nil {
			io.Copy(io.Discard, io.LimitReader(res.Body, 4096))
			res.Body.Close()
			alive = true
			cutOff = res.StatusCode == http.StatusOK && res.Header.Get(healthzEtcd) == healthzEtcdUnreachable
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.ended:
	case (!alive || cutOff) && w.ctx.Err() == nil:
		w.struck, w.stalledIn, w.cutOff = true, time.Since(w.armed), cutOff
		w.cancel()
	case alive && !cutOff:
		w.probe.Reset(w.stall)
	}
}

// answered disarms the timers as the answer's headers arrive and reports
// whether they came in time.
func (w *answerWait) answered() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.ended {
		w.ended = true
		if w.timer != nil {
			w.timer.Stop()
		}
		if w.probe != nil {
			w.probe.Stop()
		}
	}
	return !w.struck
}

// stalledAt reports whether the stall probe ended the attempt, how long
// after the request was written, and whether on the region's word that
// it cannot reach etcd (else /healthz did not answer).
func (w *answerWait) stalledAt() (at time.Duration, stalled, cutOff bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stalledIn.Round(time.Millisecond), w.stalledIn > 0, w.cutOff
}

// stop releases the attempt's timers and context once it is over.
func (w *answerWait) stop() {
	w.answered()
	w.cancel()
}

// logSwitch records a retry sent to another region at once, without the
// key, the token or a body.
func (c *Client) logSwitch(ctx context.Context, attempt int, from, to *region, resp *Response, err error) {
	attrs := []slog.Attr{slog.Int("attempt", attempt), slog.String("from", from.shown), slog.String("to", to.shown)}
	if resp != nil {
		attrs = append(attrs, slog.Int("status", resp.Status))
	} else {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	c.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "idemcoord client: retrying in another region", attrs...)
}

// logRetry records one retry without the key, the token or a body.
func (c *Client) logRetry(ctx context.Context, attempt int, resp *Response, err error, wait time.Duration) {
	attrs := []slog.Attr{slog.Int("attempt", attempt), slog.Duration("wait", wait)}
	if resp != nil {
		attrs = append(attrs, slog.Int("status", resp.Status), slog.String("operation_id", resp.OperationID))
	} else {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	c.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "idemcoord client: retrying", attrs...)
}

// unsent reports whether a transport error shows that the request never
// left: the connection or its TLS handshake failed, or the host name did
// not resolve. Only such errors count as "nothing was sent", together
// with the transport never having written the request's head; anything
// else (a reset, an EOF, a timeout) may have come after the server read
// the request.
func unsent(err error) bool {
	var (
		op    *net.OpError
		dns   *net.DNSError
		alert tls.AlertError
	)
	switch {
	case errors.As(err, &dns), errors.As(err, &alert):
		return true
	case errors.As(err, &op):
		return op.Op == "dial"
	}
	return false
}
