package ownership

import (
	"errors"
	"log/slog"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idemcoord/idemcoord/clock"
)

// CacheConfig configures a Cache.
type CacheConfig struct {
	// Client is the etcd client. Required.
	Client *clientv3.Client
	// Prefix is the directory prefix. Default DefaultPrefix.
	Prefix string
	// Logger is the logger. Default slog.Default().
	Logger *slog.Logger
	// Clock times the re-read backoff. Default the system clock.
	Clock clock.Clock
}

// DefaultCacheConfig returns a CacheConfig with every default set; only
// Client is left to set.
func DefaultCacheConfig() CacheConfig {
	return CacheConfig{Prefix: DefaultPrefix, Logger: slog.Default(), Clock: clock.Real()}
}

// Validate names the first field that cannot work.
func (c CacheConfig) Validate() error {
	if c.Client == nil {
		return errors.New("ownership: cache: Client is required")
	}
	return nil
}

// withDefaults returns c with every zero field defaulted.
func (c CacheConfig) withDefaults() CacheConfig {
	d := DefaultCacheConfig()
	if c.Prefix == "" {
		c.Prefix = d.Prefix
	}
	if c.Logger == nil {
		c.Logger = d.Logger
	}
	c.Clock = clock.Or(c.Clock)
	return c
}
