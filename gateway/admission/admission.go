// Package admission is the gateway's first stage: it reads and checks
// what a claim needs (the key, the first-sent time, the body within its
// cap and declared type, the fingerprint within its budget) and charges
// the per-actor limits. It answers a refused request itself.
package admission

import (
	"errors"
	"net/http"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// Stage admits coordinated requests. It holds the clock (first-sent
// windows, limits), the fingerprint budget, the worker name the claims
// carry and the per-actor limits.
type Stage struct {
	clock  clock.Clock
	budget *FingerprintBudget
	worker string
	limits *limiter
}

// New returns the admission of a gateway whose instance is worker, over
// endpoints eps.
func New(c clock.Clock, budget *FingerprintBudget, worker string, eps []config.Endpoint) *Stage {
	return &Stage{clock: c, budget: budget, worker: worker, limits: newLimiter(c, eps)}
}

// Verdict is how admission ended.
type Verdict int

const (
	// Admitted: the claim request is ready.
	Admitted Verdict = iota
	// Answered: admission refused the request and answered it.
	Answered
	// Uncoordinated: no key on an endpoint that does not require one; the
	// request goes upstream as it is.
	Uncoordinated
)

// errKeyRepeated refuses a request with more than one key header.
var errKeyRepeated = exchange.NewInvalid("more than one Idempotency-Key header")

// Admit reads and checks what the claim needs: the key, the first-sent
// time, the body (within its cap and declared type) and its fingerprint.
// It answers the client itself when the request is refused.
func (a *Stage) Admit(c *exchange.Request) (store.ClaimRequest, Verdict) {
	r, ep := c.R, c.Endpoint
	values := r.Header.Values(exchange.HeaderKey)
	if len(values) == 0 {
		if c.Policy.KeyRequired {
			c.Refuse("missing_key", exchange.Problem{Type: "missing-key", Title: "Idempotency-Key header required",
				Detail: "this endpoint runs a request only under an Idempotency-Key: send one per intent " +
					"(a UUID), the same on every retry of it; nothing was executed",
				Status: http.StatusBadRequest, NewKeySafe: true})
			return store.ClaimRequest{}, Answered
		}
		return store.ClaimRequest{}, Uncoordinated
	}
	key, err := idempotency.ParseKeyHeader(values[0])
	if err == nil && len(values) > 1 {
		err = errKeyRepeated
	}
	if err != nil {
		c.Refuse("invalid_key", exchange.Problem{Type: "invalid-key", Title: "invalid Idempotency-Key",
			Detail: exchange.Reason(err, "the Idempotency-Key header does not parse"), Status: http.StatusBadRequest, NewKeySafe: true})
		return store.ClaimRequest{}, Answered
	}
	c.Key = key
	firstSent, refused, bad := a.firstSent(c)
	if bad {
		c.Refuse("first_sent_refused", refused)
		return store.ClaimRequest{}, Answered
	}
	if c.Body, err = readBody(r, c.Policy.MaxRequestBytes); err != nil {
		c.Refuse("body_too_large", exchange.Problem{Type: "body-too-large", Title: "request body over the endpoint's cap",
			Detail: bodyCapDetail(c.Policy.MaxRequestBytes), Status: http.StatusRequestEntityTooLarge, NewKeySafe: true})
		return store.ClaimRequest{}, Answered
	}
	if !ep.AcceptsBody(r.Header.Get("Content-Type"), len(c.Body)) {
		unsupportedMediaType(c)
		return store.ClaimRequest{}, Answered
	}
	if enc := contentEncoding(r, ep, len(c.Body)); enc != "" {
		unsupportedEncoding(c, enc)
		return store.ClaimRequest{}, Answered
	}
	// Bounded: a burst of large bodies waits here, or gets 503.
	release, err := a.budget.Acquire(r.Context(), int64(len(c.Body)))
	if err != nil {
		fingerprintBusy(c)
		return store.ClaimRequest{}, Answered
	}
	fp, members, err := fingerprintMembers(c) // members.go
	release()
	if err != nil {
		c.Refuse("malformed_body", exchange.Problem{Type: "malformed-body", Title: "request body cannot be fingerprinted",
			Detail: exchange.Reason(err, "the request body cannot be read as its declared type"), Status: http.StatusBadRequest, NewKeySafe: true})
		return store.ClaimRequest{}, Answered
	}
	return store.ClaimRequest{
		Scope:         store.Scope{Actor: c.Actor, Endpoint: ep.Name, Key: key},
		Fingerprint:   fp,
		Refingerprint: func(v int) (idempotency.Fingerprint, error) { return fingerprint(c, v) },
		Worker:        a.worker,
		Lease:         c.Policy.Lease,
		TTL:           c.Policy.TTL,
		ReplayTTL:     c.Policy.ReplayTTL,
		Pending:       c.Policy.Async,
		// A holder fenced out by a move is taken over at once where the
		// upstream deduplicates (the gateway's inflight.go).
		TakeOverFenced: ep.TakesOverFenced(),
		FirstSent:      firstSent,
		KeepStages:     ep.Completes(),
		Members:        members,
		// Past the provider's key window nothing is sent again (the
		// gateway's window.go).
		DownstreamWindow: ep.DownstreamWindow,
	}, Admitted
}

func fingerprint(c *exchange.Request, version int) (idempotency.Fingerprint, error) {
	if version == 0 {
		version = idempotency.FingerprintV2 // new records keep member digests (members.go)
	}
	req := idempotency.Request{Method: c.R.Method, Path: c.R.URL.Path,
		Query: c.R.URL.RawQuery, ContentType: c.R.Header.Get("Content-Type"), Body: c.Body}
	if c.Endpoint.DeclaredBody() == config.BodyMultipart && len(c.Body) > 0 {
		canon, err := canonicalMultipart(req.ContentType, c.Body)
		if err != nil {
			return idempotency.Fingerprint{}, err
		}
		req.ContentType, req.Body = multipartMediaType, canon
		// The body's cap was checked before reading; the form, a few
		// dozen bytes a part, may come out a little longer than a body of
		// many tiny parts.
		opts := c.Policy.Fingerprint
		opts.MaxBytes = max(opts.MaxBytes, int64(len(canon)))
		return idempotency.ComputeFingerprintVersion(req, opts, version)
	}
	return idempotency.ComputeFingerprintVersion(req, c.Policy.Fingerprint, version)
}

// errBodyTooLarge is a body over the endpoint's cap.
var errBodyTooLarge = errors.New("admission: body too large")

// readBody reads at most limit bytes; more is an error. A body of declared
// length is read into one buffer of that length.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, errBodyTooLarge
	}
	b, err := exchange.ReadAtMost(r.Body, r.ContentLength, limit+1)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, errBodyTooLarge
	}
	return b, nil
}
