package idempotency

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Defaults for Policy. Each says why it has its value.
const (
	// DefaultTTL is how long a key is remembered. 24 hours covers a phone
	// that retries after a night offline and matches common payment APIs;
	// payments may want longer, search exports shorter.
	DefaultTTL = 24 * time.Hour
	// DefaultLease is how long a worker owns an operation without a
	// heartbeat. It must exceed the upstream timeout, or a slow but live
	// worker is taken over and the intent runs twice.
	DefaultLease = 30 * time.Second
	// DefaultMaxRequestBytes caps request bodies (1 MiB): larger bodies are
	// refused before they are read into memory or fingerprinted.
	DefaultMaxRequestBytes = 1 << 20
	// DefaultMaxResponseBytes caps the stored response body (64 KiB): the
	// record is a replay aid, not a blob store.
	DefaultMaxResponseBytes = 64 << 10
	// DefaultMaxFingerprintBytes is the fingerprint's own body cap.
	DefaultMaxFingerprintBytes = DefaultMaxRequestBytes
)

// StatusRange is an inclusive range of HTTP status codes.
type StatusRange struct{ Lo, Hi int }

// ParseStatusRange parses "2xx", "404" or "400-451".
func ParseStatusRange(s string) (StatusRange, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	if len(s) == 3 && s[1:] == "xx" && s[0] >= '1' && s[0] <= '5' {
		lo := int(s[0]-'0') * 100
		return StatusRange{lo, lo + 99}, nil
	}
	lo, hi, isRange := strings.Cut(s, "-")
	if !isRange {
		hi = lo
	}
	l, err1 := strconv.Atoi(lo)
	h, err2 := strconv.Atoi(hi)
	if err1 != nil || err2 != nil || l < 100 || h > 599 || l > h {
		return StatusRange{}, fmt.Errorf("idempotency: status range %q: want NNN, Nxx or NNN-NNN within 100-599", s)
	}
	return StatusRange{l, h}, nil
}

// Contains reports whether code is in the range.
func (r StatusRange) Contains(code int) bool { return code >= r.Lo && code <= r.Hi }

// Policy is the idempotency policy of one endpoint. The zero value is not
// usable; start from DefaultPolicy.
type Policy struct {
	// KeyRequired makes a missing Idempotency-Key a 400. When false a
	// request without a key passes through uncoordinated.
	KeyRequired bool
	// TTL is how long a key's record lives after its last change. Default
	// DefaultTTL. Longer protects later retries and costs storage.
	TTL time.Duration
	// ReplayTTL, when positive and shorter than TTL, is how long a
	// record keeps its full answer; after it only a dedup marker is kept
	// until TTL, and a retry gets "completed; the answer is no longer
	// kept" instead of a replay. Zero keeps the full answer for TTL.
	ReplayTTL time.Duration
	// Lease is how long a worker owns an in-flight operation. Default
	// DefaultLease. Shorter recovers crashed workers sooner; too short takes
	// over live ones.
	Lease time.Duration
	// Fingerprint says what of the request identifies the intent.
	Fingerprint FingerprintOptions
	// StoreStatuses are the upstream error statuses whose responses are
	// stored and replayed as TERMINAL_FAILURE. Default 4xx (2xx and 3xx are
	// always stored, as COMPLETED). A status in RetryStatuses is never
	// stored.
	StoreStatuses []StatusRange
	// RetryStatuses are upstream statuses that mean "did not take effect,
	// run again on the next retry". Default 408, 425, 429, 500, 502, 503, 504.
	RetryStatuses []StatusRange
	// ResponseHeaders is the allow-list of response headers stored and
	// replayed, in canonical form. Nothing else is kept.
	ResponseHeaders []string
	// MaxRequestBytes caps request bodies. Default DefaultMaxRequestBytes.
	MaxRequestBytes int64
	// MaxResponseBytes caps the stored response body; a larger response is
	// still returned to the first caller but stored truncated-free as
	// "too large", so a replay says so instead of returning half a body.
	// Default DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// Async answers 202 with a status URL and runs the intent in the
	// background.
	Async bool
}

// DefaultPolicy returns the policy with every default filled in.
func DefaultPolicy() Policy {
	return Policy{
		KeyRequired:      true,
		TTL:              DefaultTTL,
		Lease:            DefaultLease,
		Fingerprint:      FingerprintOptions{MaxBytes: DefaultMaxFingerprintBytes},
		StoreStatuses:    []StatusRange{{400, 499}},
		RetryStatuses:    []StatusRange{{408, 408}, {425, 425}, {429, 429}, {500, 500}, {502, 504}},
		ResponseHeaders:  []string{"Content-Type", "Location"},
		MaxRequestBytes:  DefaultMaxRequestBytes,
		MaxResponseBytes: DefaultMaxResponseBytes,
	}
}

// Validate reports every invalid field, naming it and saying why.
func (p Policy) Validate() error {
	var errs []error
	if p.TTL <= 0 {
		errs = append(errs, fmt.Errorf("ttl: must be positive, got %s", p.TTL))
	}
	if p.Lease <= 0 {
		errs = append(errs, fmt.Errorf("lease: must be positive, got %s", p.Lease))
	}
	if p.ReplayTTL < 0 || p.ReplayTTL > p.TTL {
		errs = append(errs, fmt.Errorf("replay_ttl: must be between 0 and ttl %s, got %s", p.TTL, p.ReplayTTL))
	}
	if p.TTL > 0 && p.Lease > p.TTL {
		errs = append(errs, fmt.Errorf("lease: %s is longer than ttl %s; a record could expire while its worker runs", p.Lease, p.TTL))
	}
	for i, r := range p.RetryStatuses {
		if r.Lo < 400 {
			errs = append(errs, fmt.Errorf("retry_statuses[%d]: %d-%d includes a non-error status", i, r.Lo, r.Hi))
		}
	}
	if p.MaxRequestBytes <= 0 {
		errs = append(errs, fmt.Errorf("max_request_bytes: must be positive, got %d", p.MaxRequestBytes))
	}
	if p.MaxResponseBytes <= 0 {
		errs = append(errs, fmt.Errorf("max_response_bytes: must be positive, got %d", p.MaxResponseBytes))
	}
	if err := p.Fingerprint.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("fingerprint: %w", err))
	}
	for i, h := range p.ResponseHeaders {
		if h == "" || strings.ContainsAny(h, " :\r\n") {
			errs = append(errs, fmt.Errorf("response_headers[%d]: %q is not a header name", i, h))
		}
	}
	return errors.Join(errs...)
}

// Classify maps an upstream status to the state its record takes. A 1xx-3xx
// answer is always COMPLETED, listed or not: a success must never be run
// again. Errors listed in neither list are retryable (not stored).
func (p Policy) Classify(status int) State {
	if status < 400 {
		return Completed
	}
	for _, r := range p.RetryStatuses {
		if r.Contains(status) {
			return RetryableFailure
		}
	}
	for _, r := range p.StoreStatuses {
		if r.Contains(status) {
			return TerminalFailure
		}
	}
	return RetryableFailure
}

// KeepHeader reports whether a response header is on the allow-list.
func (p Policy) KeepHeader(name string) bool {
	name = http.CanonicalHeaderKey(name)
	for _, h := range p.ResponseHeaders {
		if http.CanonicalHeaderKey(h) == name {
			return true
		}
	}
	return false
}
