package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// retryableStatus reports whether a fresh (not replayed) answer with this
// status may change on a retry: 409 is an operation still running or of
// unknown outcome, 429 and 5xx are the gateway or upstream asking for
// another try, and the gateway does not store them. A replay is the stored
// answer for the key and will be the same next time.
func retryableStatus(r *Response) bool {
	if r.Replayed {
		return false
	}
	switch r.Status {
	case http.StatusConflict:
		// Past the downstream window the gateway sends nothing until an
		// operator settles the operation: a retry gets the same 409.
		return !isProblemType(newProblem(r).Type, problemTypeDownstreamWindowPassed)
	case http.StatusTooManyRequests,
		http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// retryableTransport reports whether a transport failure of one attempt is
// worth another: all are (refused, reset, EOF, a timeout of the attempt,
// DNS) except a TLS certificate or protocol mismatch, which the next
// attempt meets again. Erring towards retrying is cheap because the key
// makes a retry safe and MaxAttempts bounds it. The caller checks its ctx
// first: once that is done nothing is retried.
func retryableTransport(err error) bool {
	var (
		verify   *tls.CertificateVerificationError
		record   tls.RecordHeaderError
		auth     x509.UnknownAuthorityError
		host     x509.HostnameError
		invalid  x509.CertificateInvalidError
		insecure x509.InsecureAlgorithmError
	)
	return !(errors.As(err, &verify) || errors.As(err, &record) ||
		errors.As(err, &auth) || errors.As(err, &host) ||
		errors.As(err, &invalid) || errors.As(err, &insecure))
}

// wait returns how long to wait after the given failed attempt: the
// larger of the jittered backoff and the server's Retry-After, capped by
// MaxRetryWait.
func (c *Client) wait(attempt int, retryAfter time.Duration) time.Duration {
	return min(max(c.backoff(attempt), retryAfter), MaxRetryWait)
}

// backoff draws the wait after the given failed attempt (1-based)
// uniformly from [0, min(MaxDelay, BaseDelay*2^(attempt-1))]: capped
// exponential backoff with full jitter, which spreads clients that failed
// together instead of letting them retry in lockstep.
func (c *Client) backoff(attempt int) time.Duration {
	ceiling := c.cfg.MaxDelay
	if shift := attempt - 1; shift >= 0 && shift < 32 {
		if d := c.cfg.BaseDelay << shift; d>>shift == c.cfg.BaseDelay && d < ceiling {
			ceiling = d
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Duration(c.rng.Int64N(int64(ceiling) + 1))
}

// parseRetryAfter reads a Retry-After value, delay-seconds or an
// HTTP-date, as a duration from now. ok is false for an absent or
// malformed value. A date in the past is zero; a huge delay is
// MaxRetryWait.
func parseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		secs, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			var numErr *strconv.NumError
			if errors.As(err, &numErr) && numErr.Err == strconv.ErrRange {
				return MaxRetryWait, true
			}
			return 0, false
		}
		if secs > uint64(MaxRetryWait/time.Second) {
			return MaxRetryWait, true
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}
