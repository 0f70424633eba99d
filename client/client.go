package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/idemcoord/idemcoord/clock"
)

// Client sends intents to an idemcoord-fronted API. It is safe for
// concurrent use.
type Client struct {
	cfg     Config
	regions *regions

	mu  sync.Mutex // guards rng
	rng *rand.Rand

	firstSent firstSentMemo // firstsent.go
}

// New returns a Client for cfg, with defaults for its zero fields. Errors
// wrap ErrInvalidConfig.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	c := &Client{
		cfg:     cfg,
		regions: newRegions(cfg),
		// PCG wants two words; the second is a fixed odd constant so that
		// Seed alone decides the sequence.
		rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)),
	}
	c.regions.probeFn = c.probe
	return c, nil
}

// Intent is one business intent: the request to send and the key that makes
// its retries safe.
type Intent struct {
	// Method is the HTTP method, such as "POST". Required.
	Method string
	// Path is appended to Config.BaseURL (or the URL of the region an
	// attempt goes to) and may carry a query, such as
	// "/v1/payments?expand=fees". Not a full URL.
	Path string
	// Key is the idempotency key from NewKey, the same on every retry of
	// this intent. Required unless Method is GET or HEAD; 1 to MaxKeyLen
	// bytes of printable ASCII. Do sends it as an RFC 8941 sf-string.
	Key string
	// Body is sent as is on every attempt. If it is not empty and Header
	// has no Content-Type, Content-Type is application/json.
	Body []byte
	// Header holds extra request headers. It may not carry
	// Idempotency-Key (use Key); an Authorization header in it is
	// overridden when Config has a token.
	Header http.Header
	// UpstreamTimeout is the upstream_timeout of the endpoint this intent
	// calls, when it differs from Config.UpstreamTimeout: it sets the
	// intent's response-header timeout (Config.ResponseHeaderTimeout).
	// Zero means Config.UpstreamTimeout.
	UpstreamTimeout time.Duration
}

// PostJSON marshals v once and POSTs it to path under key with Do: every
// attempt sends the same bytes. See Do for the results.
func (c *Client) PostJSON(ctx context.Context, path, key string, v any) (*Response, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: Body: %w", ErrInvalidIntent, err)
	}
	return c.Do(ctx, Intent{Method: http.MethodPost, Path: path, Key: key, Body: body})
}

// Do sends in, retrying as the package documentation describes, and returns
// the final answer.
//
//   - 2xx or 3xx: the *Response and a nil error.
//   - any other final status: the *Response and a *ProblemError; a 422
//     fingerprint mismatch matches ErrFingerprintMismatch.
//   - no final answer (MaxAttempts used up, or ctx ended after the first
//     attempt started): a *GaveUpError, with the last *Response if the
//     last attempt got one and nil otherwise. The intent may or may not
//     have taken effect: retry later with the same key.
//   - an invalid intent (ErrInvalidIntent), a TokenSource error, a ctx
//     already done, or a transport error not worth retrying (a bad TLS
//     certificate): a nil *Response and that error; but a TokenSource
//     error after earlier attempts is a *GaveUpError, since those attempts
//     may have run.
//
// Safety over liveness: Do never changes the key or the body between
// attempts, and never retries a replayed answer, so a retry can at worst
// return the stored result of an earlier attempt, never run the intent
// twice. The price is that an intent whose first attempt is stuck
// OUTCOME_UNKNOWN on the server gets 409s until the server resolves it.
func (c *Client) Do(ctx context.Context, in Intent) (*Response, error) {
	keyed := in.Method != http.MethodGet && in.Method != http.MethodHead
	return c.retry(ctx, in, keyed, retryableStatus, true)
}

// retry sends in until a final answer, as Do describes: retryable says
// which answers may change on another try; ambiguous says whether an
// attempt that may have run the intent makes a later final answer
// ambiguous (a keyed intent; not a cancel, which is idempotent by itself).
func (c *Client) retry(ctx context.Context, in Intent, keyed bool, retryable func(*Response) bool, ambiguous bool) (*Response, error) {
	path, header, err := c.prepare(in, keyed)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	route := c.regions.route(c.cfg.Clock.Now())
	// mayHaveRun records that an earlier attempt may have reached the
	// intent (its answer was lost, or it was in progress): from then on no
	// final answer may tell the caller a new key is safe.
	mayHaveRun := false
	for attempt := 1; ; attempt++ {
		token, err := c.token(ctx)
		if err != nil {
			if attempt > 1 {
				return nil, gaveUp(ambiguous, mayHaveRun, attempt-1, err)
			}
			return nil, err
		}
		reg := route.region()
		resp, sent, err := c.send(ctx, reg, reg.base+path, in, header, token, attempt)
		switch {
		case resp != nil && regionDown(resp):
			reg.br.failed(c.cfg.Clock.Now())
		case resp != nil:
			reg.br.answered()
			if !refusedUnrun(resp) {
				c.regions.budget.refill()
			}
			c.regions.learn(resp)
		case err != nil && ctx.Err() == nil:
			reg.br.failed(c.cfg.Clock.Now())
		}
		if err == nil {
			return resp, nil
		}
		var retryAfter time.Duration
		// elsewhere: the attempt proved that nothing ran and that another
		// region may well answer, so the retry goes there at once.
		elsewhere := false
		switch {
		case resp != nil && !retryable(resp):
			// A replay is the one run's own answer: final. Anything else
			// after an attempt that may have run leaves the outcome open.
			if mayHaveRun && !resp.Replayed {
				return resp, ambiguousEnd(attempt, err)
			}
			return resp, err
		case resp != nil:
			retryAfter, _ = parseRetryAfter(resp.Header.Get("Retry-After"), c.cfg.Clock.Now())
			elsewhere = refusedUnrun(resp)
			mayHaveRun = ambiguous && (mayHaveRun || mayHaveRunBy(resp))
		case ctx.Err() != nil:
			return nil, &GaveUpError{Attempts: attempt, Err: err}
		case !retryableTransport(err):
			if mayHaveRun {
				return nil, ambiguousEnd(attempt, err)
			}
			return nil, err
		case sent:
			mayHaveRun = ambiguous // the request may have been read
		default:
			elsewhere = true // refused, DNS, TLS handshake: nothing was sent
		}
		if attempt >= c.cfg.MaxAttempts {
			return resp, gaveUp(ambiguous, mayHaveRun, attempt, err)
		}
		now := c.cfg.Clock.Now()
		if elsewhere && route.switchNow(now) {
			c.logSwitch(ctx, attempt, reg, route.region(), resp, err)
			continue
		}
		wait := c.wait(attempt, retryAfter)
		c.logRetry(ctx, attempt, resp, err, wait)
		if serr := clock.Sleep(ctx, c.cfg.Clock, wait); serr != nil {
			return resp, gaveUp(ambiguous, mayHaveRun, attempt, fmt.Errorf("%w while waiting to retry; last attempt: %w", serr, err))
		}
		// After a transport failure or a refusal the wait was the
		// budget's price: the retry still leaves the region.
		route.waited(c.cfg.Clock.Now(), resp == nil || elsewhere)
	}
}

// ambiguousEnd reports a final answer that came after an attempt that may
// have run the intent: the outcome is unknown to the caller, so it is a
// *GaveUpError (retry later with the same key), and a problem's NewKeySafe
// is cleared — starting over under a new key could run the intent twice.
func ambiguousEnd(attempts int, err error) error {
	var p *ProblemError
	if errors.As(err, &p) {
		p.NewKeySafe = false
	}
	return &GaveUpError{Attempts: attempts, Err: err}
}

// prepare checks in and builds what every attempt shares: the path to
// append to a region's URL and the headers other than Authorization. keyed says the request must carry a
// key; a key given anyway is checked either way.
func (c *Client) prepare(in Intent, keyed bool) (string, http.Header, error) {
	if in.Method == "" {
		return "", nil, fmt.Errorf("%w: Method is empty", ErrInvalidIntent)
	}
	if in.UpstreamTimeout < 0 {
		return "", nil, fmt.Errorf("%w: UpstreamTimeout %v is negative; 0 means Config.UpstreamTimeout", ErrInvalidIntent, in.UpstreamTimeout)
	}
	if in.Key != "" || keyed {
		if err := checkKey(in.Key); err != nil {
			return "", nil, err
		}
	}
	for name := range in.Header {
		if http.CanonicalHeaderKey(name) == "Idempotency-Key" {
			return "", nil, fmt.Errorf("%w: Header carries Idempotency-Key; set Key instead", ErrInvalidIntent)
		}
	}
	ref, err := url.Parse(in.Path)
	if err != nil || ref.Scheme != "" || ref.Host != "" {
		return "", nil, fmt.Errorf("%w: Path must be a path relative to BaseURL", ErrInvalidIntent)
	}
	path := "/" + strings.TrimPrefix(in.Path, "/")
	if _, err := url.Parse(c.regions.list[0].base + path); err != nil {
		return "", nil, fmt.Errorf("%w: Path: %w", ErrInvalidIntent, err)
	}
	header := in.Header.Clone()
	if header == nil {
		header = make(http.Header)
	}
	if in.Key != "" {
		header.Set("Idempotency-Key", formatKey(in.Key))
		c.firstSent.stamp(header, in.Method+" "+path+" "+in.Key, c.cfg.Clock.Now()) // firstsent.go: once per intent, kept on retries
	}
	if len(in.Body) > 0 && header.Get("Content-Type") == "" {
		header.Set("Content-Type", "application/json")
	}
	return path, header, nil
}

// token returns the bearer token for the next attempt, "" for none.
func (c *Client) token(ctx context.Context) (string, error) {
	if c.cfg.TokenSource == nil {
		return c.cfg.Token, nil
	}
	t, err := c.cfg.TokenSource(ctx)
	if err != nil {
		return "", fmt.Errorf("client: TokenSource: %w", err)
	}
	return t, nil
}
