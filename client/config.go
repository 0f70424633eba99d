package client

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/idemcoord/idemcoord/clock"
)

const (
	// DefaultMaxAttempts is 8: with the default delays the seven waits
	// between attempts add up to at most about 11 s (half that on average,
	// with full jitter), enough to ride out a gateway restart or an owner
	// takeover after a lease expires, and short enough that a person
	// waiting on the request is still there.
	DefaultMaxAttempts = 8

	// DefaultBaseDelay is 100 ms, about one round trip through the gateway
	// plus a store write: retrying sooner mostly earns another 409 from the
	// attempt that is still running.
	DefaultBaseDelay = 100 * time.Millisecond

	// DefaultMaxDelay is 5 s. It caps the backoff, not the server: a longer
	// Retry-After is still honoured up to MaxRetryWait.
	DefaultMaxDelay = 5 * time.Second

	// DefaultTimeout bounds one attempt of the default HTTPClient. 30 s is
	// longer than the gateway's own upstream timeout, so the gateway, which
	// knows whether the upstream ran, answers first.
	DefaultTimeout = 30 * time.Second

	// DefaultDialTimeout bounds opening a connection with the default
	// HTTPClient. 3 s covers a lost SYN's first retransmission (1 s) on a
	// far link; a region that does not accept within it is treated as
	// unreachable (nothing was sent), so a client with several regions
	// moves on instead of spending the whole attempt's DefaultTimeout.
	DefaultDialTimeout = 3 * time.Second

	// DefaultUpstreamTimeout is the coordinator's default upstream_timeout
	// (config.DefaultUpstreamTimeout, 10 s): how long a gateway lets an
	// endpoint's upstream call run before it answers that the outcome is
	// unknown. Config.UpstreamTimeout and Intent.UpstreamTimeout say an
	// endpoint's own value when its configuration sets another.
	DefaultUpstreamTimeout = 10 * time.Second

	// DefaultStallProbe is Config.StallProbe's default: well above a
	// gateway's own time around a call (milliseconds), well below the
	// response-header timeout of any endpoint.
	DefaultStallProbe = time.Second

	// DefaultAnswerSlack is what a gateway may add to the upstream call
	// before its answer's headers leave: a move or failover hold (at most
	// 2 s) and the store writes around the call. The response-header
	// timeout is the endpoint's upstream timeout plus this.
	DefaultAnswerSlack = 2 * time.Second

	// MaxRetryWait caps any single wait, Retry-After included. A server that
	// asks for more than a minute is misconfigured or overloaded, and a
	// client blocked that long holds its caller hostage; retrying sooner is
	// safe because the key makes it so, and at worst earns another 409 or
	// 503.
	MaxRetryWait = 60 * time.Second
)

// Config configures a Client. The zero value of every field but BaseURL
// (or Regions) means its default; DefaultConfig spells the defaults out.
type Config struct {
	// BaseURL is the API root, such as "https://api.example.com/v2";
	// Intent.Path is appended to it: http or https, with a host and no
	// query or fragment. It is the one-region form of Regions: set exactly
	// one of the two.
	BaseURL string

	// Regions are every region of a multi-region deployment, in the order
	// to try them (nearest first): see the package documentation, "Several
	// regions". ParseRegions reads the list `idemd dev` prints. Set
	// exactly one of BaseURL and Regions.
	Regions []Region

	// HTTPClient sends each attempt. Its Timeout bounds one attempt; the
	// ctx given to Do bounds them all. Default: a client with
	// DefaultTimeout that returns 3xx answers instead of following them,
	// since a 303 would turn the request into a GET without its body.
	HTTPClient *http.Client

	// UpstreamTimeout is the upstream_timeout the endpoints called through
	// this Client are configured with (docs/configuration.md), which the
	// response-header timeout is derived from. Intent.UpstreamTimeout
	// overrides it for one intent. Default DefaultUpstreamTimeout.
	UpstreamTimeout time.Duration

	// ResponseHeaderTimeout bounds how long an attempt waits for the
	// answer's headers once the request is written. A region that stops
	// answering (a paused process keeps its connections open) is then
	// left: the attempt counts as one that may have run, and the next one
	// goes, under the same key and first-sent time, to the next region
	// after the usual backoff, where the coordinator either answers from
	// the one run's record or waits for it. Default: the intent's upstream
	// timeout plus DefaultAnswerSlack, the longest a live gateway takes.
	// A negative value turns it off (only HTTPClient.Timeout bounds an
	// attempt). It runs on the wall clock, like the transport's own
	// timeouts; Clock paces only the waits between attempts.
	ResponseHeaderTimeout time.Duration

	// StallProbe is how long an attempt's request may go unanswered
	// before the client asks the region's /healthz whether its process
	// still runs, and again every StallProbe after each answer. A region
	// whose /healthz does not answer within half a second is stalled (a
	// paused or frozen process keeps the connections it accepted), and
	// one whose /healthz answers "Idemcoord-Etcd: unreachable" is cut off
	// from etcd (its shards are about to move): the attempt ends then, as
	// at the response-header timeout (it may have run), and the next one
	// goes to the next region under the same key and first-sent time,
	// instead of waiting out the whole timeout. A region that answers
	// otherwise, busy or not, is waited for as before. Default
	// DefaultStallProbe; negative turns the probe off. It is sent only
	// with several Regions (over one URL the retry could only go where it
	// went, and a load balancer in front of every region would answer
	// /healthz for another one), and not when the response-header timeout
	// would strike first.
	StallProbe time.Duration

	// Token is a static bearer token sent as "Authorization: Bearer".
	// Optional; set at most one of Token and TokenSource. It overrides an
	// Authorization header in Intent.Header.
	Token string

	// TokenSource returns the bearer token. It is called before every
	// attempt, so a token that expires during backoff is replaced; cache
	// inside it. An error from it ends Do. Optional.
	TokenSource func(ctx context.Context) (string, error)

	// MaxAttempts is how many attempts Do makes, the first included, before
	// it gives up with ErrGaveUp. 1 disables retries. Default
	// DefaultMaxAttempts.
	MaxAttempts int

	// BaseDelay is the backoff ceiling after the first failed attempt; it
	// doubles after each further one, up to MaxDelay. The wait itself is
	// drawn uniformly from zero to the ceiling (full jitter), so clients
	// that failed together do not retry together. Default
	// DefaultBaseDelay.
	BaseDelay time.Duration

	// MaxDelay caps the backoff ceiling. At least BaseDelay, at most
	// MaxRetryWait. Default DefaultMaxDelay.
	MaxDelay time.Duration

	// Seed seeds the jitter. 0 means a random seed; tests set one to make
	// the waits repeatable.
	Seed uint64

	// Clock is what Do waits on between attempts, and the "now" an
	// HTTP-date Retry-After is measured from. Default clock.Real(). Tests
	// pass a *clock.Fake and advance it instead of sleeping.
	Clock clock.Clock

	// Logger receives one Debug record per retry: attempt, status or
	// error, wait and operation id, never the key, the token or a body.
	// Default: discard.
	Logger *slog.Logger
}

// DefaultConfig returns a Config with every default filled in; BaseURL
// (or Regions) and the token are left to set.
func DefaultConfig() Config {
	return Config{}.withDefaults()
}

// withDefaults returns c with its zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.HTTPClient == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.DialContext = (&net.Dialer{Timeout: DefaultDialTimeout, KeepAlive: 30 * time.Second}).DialContext
		c.HTTPClient = &http.Client{
			Transport: t,
			Timeout:   DefaultTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		}
	}
	if c.UpstreamTimeout == 0 {
		c.UpstreamTimeout = DefaultUpstreamTimeout
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.StallProbe == 0 {
		c.StallProbe = DefaultStallProbe
	}
	if c.BaseDelay == 0 {
		c.BaseDelay = DefaultBaseDelay
	}
	if c.MaxDelay == 0 {
		c.MaxDelay = max(DefaultMaxDelay, c.BaseDelay)
	}
	c.Clock = clock.Or(c.Clock)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports the first field of c that is unusable, naming it and
// saying why. Errors wrap ErrInvalidConfig. Zero values are valid: they
// mean the default.
func (c Config) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidConfig, field, fmt.Sprintf(format, args...))
	}
	switch {
	case c.BaseURL == "" && len(c.Regions) == 0:
		return bad("BaseURL", "required (or Regions, for several regions)")
	case c.BaseURL != "" && len(c.Regions) > 0:
		return bad("BaseURL", "set BaseURL (one region) or Regions (several), not both")
	case c.BaseURL != "":
		if err := checkBaseURL(c.BaseURL); err != nil {
			return bad("BaseURL", "%v", err)
		}
	default:
		if err := checkRegions(c.Regions); err != nil {
			return err
		}
	}
	if c.Token != "" && c.TokenSource != nil {
		return bad("Token", "set Token or TokenSource, not both")
	}
	for i := 0; i < len(c.Token); i++ {
		if b := c.Token[i]; b <= ' ' || b >= 0x7f {
			return bad("Token", "byte %d is not visible ASCII; a bearer token cannot carry it", i)
		}
	}
	d := c.withDefaults()
	switch {
	case c.UpstreamTimeout < 0:
		return bad("UpstreamTimeout", "%v is negative; 0 means the default %v", c.UpstreamTimeout, DefaultUpstreamTimeout)
	case d.MaxAttempts < 1:
		return bad("MaxAttempts", "%d is negative; 0 means the default %d", c.MaxAttempts, DefaultMaxAttempts)
	case d.BaseDelay < 0:
		return bad("BaseDelay", "%v is negative", c.BaseDelay)
	case d.MaxDelay < 0:
		return bad("MaxDelay", "%v is negative", c.MaxDelay)
	case d.MaxDelay < d.BaseDelay:
		return bad("MaxDelay", "%v is below BaseDelay %v", d.MaxDelay, d.BaseDelay)
	case d.MaxDelay > MaxRetryWait:
		return bad("MaxDelay", "%v exceeds MaxRetryWait %v, the cap on any wait", d.MaxDelay, MaxRetryWait)
	}
	return nil
}
