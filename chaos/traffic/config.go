package traffic

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/shard"
)

// ErrInvalidConfig is wrapped by Profile.Validate and Target.Validate.
var ErrInvalidConfig = errors.New("traffic: invalid config")

// Defaults.
const (
	// DefaultMaxAttempts is 8 attempts per intent in the main phase, the
	// SDK's own default: enough to ride out a failover.
	DefaultMaxAttempts = 8
	// DefaultRetryDelay is the base wait between attempts (full jitter,
	// doubling, capped at 2 s); a Retry-After is honoured up to the cap.
	DefaultRetryDelay = 100 * time.Millisecond
	// DefaultAttemptTimeout bounds one attempt: longer than the gateway's
	// upstream timeout in drills, so the gateway answers first.
	DefaultAttemptTimeout = 15 * time.Second
	// DefaultSettleTimeout bounds the settle phase after healing.
	DefaultSettleTimeout = 60 * time.Second
)

// maxRetryWait caps any wait between attempts.
const maxRetryWait = 2 * time.Second

// Profile is the shape of the workload.
type Profile struct {
	// Actors is how many actors send intents concurrently, one worker each.
	Actors int
	// Intents bounds the intents of the main phase (0 = only Duration).
	Intents int
	// Duration bounds the main phase.
	Duration time.Duration
	// Rate is the intents per second over all actors; 0 is unpaced.
	Rate float64
	// CrossRegionRetry is the share (0..1) of retries sent to another
	// region than the previous attempt.
	CrossRegionRetry float64
	// DuplicateRetry is the share (0..1) of acknowledged intents retried
	// once more anyway, as a client that lost the answer would: the retry
	// must be a replay of the stored answer.
	DuplicateRetry float64
	// ChangedBody is the share (0..1) of acknowledged intents that then
	// reuse their key with a changed amount.
	ChangedBody float64
	// MaxAttempts bounds the attempts of one intent in the main phase.
	// Default DefaultMaxAttempts.
	MaxAttempts int
	// RetryDelay is the base wait between attempts. Default DefaultRetryDelay.
	RetryDelay time.Duration
	// AttemptTimeout bounds one attempt. Default DefaultAttemptTimeout.
	AttemptTimeout time.Duration
	// SettleTimeout bounds the settle phase. Default DefaultSettleTimeout.
	SettleTimeout time.Duration
}

// Validate reports every unusable field as "field: reason".
func (p Profile) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: %s", ErrInvalidConfig, field, fmt.Sprintf(format, args...)))
	}
	if p.Actors < 1 {
		bad("actors", "must be at least 1")
	}
	if p.Intents < 0 {
		bad("intents", "must not be negative")
	}
	if p.Duration <= 0 {
		bad("duration", "must be positive")
	}
	if p.Rate < 0 {
		bad("rate", "must not be negative")
	}
	for _, s := range []struct {
		name string
		v    float64
	}{{"cross_region_retry", p.CrossRegionRetry}, {"duplicate_retry", p.DuplicateRetry},
		{"changed_body", p.ChangedBody}} {
		if s.v < 0 || s.v > 1 {
			bad(s.name, "%v is not a share in [0, 1]", s.v)
		}
	}
	if p.MaxAttempts < 0 || p.RetryDelay < 0 || p.AttemptTimeout < 0 || p.SettleTimeout < 0 {
		bad("max_attempts", "attempts and durations must not be negative")
	}
	return errors.Join(errs...)
}

func (p Profile) withDefaults() Profile {
	if p.MaxAttempts == 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.RetryDelay == 0 {
		p.RetryDelay = DefaultRetryDelay
	}
	if p.AttemptTimeout == 0 {
		p.AttemptTimeout = DefaultAttemptTimeout
	}
	if p.SettleTimeout == 0 {
		p.SettleTimeout = DefaultSettleTimeout
	}
	return p
}

// Region is one region the traffic may send to.
type Region struct {
	// Name is the region's name; URL its gateway's base URL.
	Name string
	URL  string
}

// Target is the cluster the traffic runs against.
type Target struct {
	// Regions are the regions' gateways; at least one.
	Regions []Region
	// Token returns a bearer token for an actor's subject.
	Token func(ctx context.Context, subject string) (string, error)
	// Tenant is the tenant the tokens carry: the actor scope is
	// Tenant + "/" + subject.
	Tenant string
	// Path is the endpoint's path. Default "/v1/payments".
	Path string
	// Shards is the shard count the actors hash to. Default
	// shard.DefaultCount.
	Shards int
	// Clock is what waits between attempts run on. Default clock.Real().
	Clock clock.Clock
	// SDK gives each actor the multi-region Go SDK (client.Config.Regions
	// with every region in Regions' order) instead of one single-attempt
	// client per region: each call is one Do, with the SDK's own retries,
	// region switches, breakers and owner preference inside, and every
	// attempt it makes is recorded. Regions need names the SDK accepts
	// (client.Region.Name).
	SDK bool
	// UpstreamTimeout is the endpoint's upstream_timeout; the SDK clients
	// derive their response-header timeout from it (client.Config
	// UpstreamTimeout). Zero means the SDK's default.
	UpstreamTimeout time.Duration
}

// Validate reports every unusable field.
func (t Target) Validate() error {
	var errs []error
	if len(t.Regions) == 0 {
		errs = append(errs, fmt.Errorf("%w: regions: at least one is required", ErrInvalidConfig))
	}
	for i, r := range t.Regions {
		if r.Name == "" || r.URL == "" {
			errs = append(errs, fmt.Errorf("%w: regions[%d]: name and url are required", ErrInvalidConfig, i))
		}
	}
	if t.Token == nil {
		errs = append(errs, fmt.Errorf("%w: token: required", ErrInvalidConfig))
	}
	return errors.Join(errs...)
}

func (t Target) withDefaults() Target {
	if t.Path == "" {
		t.Path = "/v1/payments"
	}
	if t.Shards == 0 {
		t.Shards = shard.DefaultCount
	}
	t.Clock = clock.Or(t.Clock)
	return t
}
