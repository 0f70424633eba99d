package ownership

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idemcoord/idemcoord/clock"
)

// Liveness defaults.
const (
	// DefaultLivenessTTL is the lease TTL: an instance that stops answering
	// disappears from etcd within this long (plus etcd's expiry check,
	// every 500 ms). 2 s is etcd's shortest lease with its default 1 s
	// election timeout (ceil(1.5 x election)). Shorter detects failures
	// sooner but lets a shorter stall look like a dead instance: with a
	// keepalive every TTL/KeepAlivesPerTTL, a stall or a latency spike
	// shorter than TTL - TTL/KeepAlivesPerTTL (1.67 s) never loses the
	// lease (docs/failover.md, "Timings").
	DefaultLivenessTTL = 2 * time.Second
	// KeepAlivesPerTTL is how many keepalives the instance sends per TTL.
	// A keepalive is one small RPC; sending them often keeps the last
	// answered one recent, so the lease survives a stall of nearly a
	// whole TTL and the instance's conservative validity (TTL -
	// PauseBudget - Drift past each one) never lapses between two.
	KeepAlivesPerTTL = 6
	// DefaultPauseBudget is subtracted from every validity: how long this
	// process may stall (GC, scheduler, a stopped VM) between checking
	// Live and acting on it.
	DefaultPauseBudget = time.Second
	// DefaultClockDrift is subtracted too: how much faster etcd's leader
	// may measure the TTL than this machine's clock over one TTL.
	DefaultClockDrift = 250 * time.Millisecond
	// DefaultRegisterTimeout bounds each registration (grant, put), so a
	// start against an unreachable etcd fails instead of hanging.
	DefaultRegisterTimeout = 5 * time.Second
)

// LivenessConfig configures NewLiveness.
type LivenessConfig struct {
	// Client is the etcd client. Required.
	Client *clientv3.Client
	// Prefix is the directory prefix. Default DefaultPrefix; the key is
	// Prefix + "liveness/" + Region + "/" + Instance.
	Prefix string
	// Region and Instance name the key. Required.
	Region, Instance string
	// TTL is the lease TTL, whole seconds (rounded up). Default
	// DefaultLivenessTTL.
	TTL time.Duration
	// PauseBudget and Drift make validity conservative: a keepalive sent
	// at t proves the lease until t + TTL - PauseBudget - Drift. Defaults
	// DefaultPauseBudget, DefaultClockDrift.
	PauseBudget, Drift time.Duration
	// RegisterTimeout bounds each registration. Default
	// DefaultRegisterTimeout.
	RegisterTimeout time.Duration
	// Clock times keepalives, validity and backoff. Default the system
	// clock.
	Clock clock.Clock
	// Logger is the logger. Default slog.Default().
	Logger *slog.Logger
}

// DefaultLivenessConfig returns a LivenessConfig with every default set;
// Client, Region and Instance are left to set.
func DefaultLivenessConfig() LivenessConfig {
	return LivenessConfig{Prefix: DefaultPrefix, TTL: DefaultLivenessTTL, PauseBudget: DefaultPauseBudget,
		Drift: DefaultClockDrift, RegisterTimeout: DefaultRegisterTimeout, Clock: clock.Real(), Logger: slog.Default()}
}

// withDefaults returns c with every zero field defaulted.
func (c LivenessConfig) withDefaults() LivenessConfig {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.TTL == 0 {
		c.TTL = DefaultLivenessTTL
	}
	c.TTL = (c.TTL + time.Second - 1).Truncate(time.Second)
	if c.PauseBudget == 0 {
		c.PauseBudget = DefaultPauseBudget
	}
	if c.Drift == 0 {
		c.Drift = DefaultClockDrift
	}
	if c.RegisterTimeout == 0 {
		c.RegisterTimeout = DefaultRegisterTimeout
	}
	c.Clock = clock.Or(c.Clock)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate names the first field that cannot work.
func (c LivenessConfig) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Client == nil:
		return errors.New("ownership: liveness: Client is required")
	case c.Region == "" || c.Instance == "":
		return errors.New("ownership: liveness: Region and Instance are required")
	case c.PauseBudget < 0 || c.Drift < 0:
		return errors.New("ownership: liveness: PauseBudget and Drift must not be negative")
	case c.TTL-c.PauseBudget-c.Drift <= c.KeepAliveInterval():
		return fmt.Errorf("ownership: liveness: TTL %s leaves no validity after one keepalive interval (%s) "+
			"once PauseBudget %s and Drift %s are taken off", c.TTL, c.KeepAliveInterval(), c.PauseBudget, c.Drift)
	}
	return nil
}

// KeepAliveInterval returns how often the instance sends a keepalive:
// TTL/KeepAlivesPerTTL, the TTL rounded up to whole seconds as etcd
// grants it (the default TTL when unset).
func (c LivenessConfig) KeepAliveInterval() time.Duration {
	return c.withDefaults().TTL / KeepAlivesPerTTL
}

// LivenessKey returns the liveness key of an instance.
func LivenessKey(prefix, region, instance string) string {
	return livenessPrefix(prefix) + region + "/" + instance
}

func livenessPrefix(prefix string) string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return prefix + "liveness/"
}
