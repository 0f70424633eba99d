package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/idemcoord/idemcoord/authn"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
)

// Load reads, parses and validates the file at path. See Parse.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// Parse decodes one YAML document, fills in defaults and validates the
// result. An unknown or mistyped field is an error naming its line; invalid
// values are reported all at once as a *ValidationError.
func Parse(data []byte) (*Config, error) {
	c, err := parse(data)
	if err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			return nil, err // its lines start with field paths
		}
		return nil, fmt.Errorf("config: %w", err)
	}
	return c, nil
}

// parse is Parse without the package prefix on decoding errors.
func parse(data []byte) (*Config, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	// A misspelt field ("leese: 5s") would otherwise be silently ignored
	// and its default used: the worst kind of config bug.
	dec.KnownFields(true)
	var c Config
	if err := dec.Decode(&c); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty document")
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one YAML document; idemd reads exactly one")
	}
	c.fillDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// fillDefaults sets every unset field that has a default. Endpoint fields
// inherit Defaults, which are filled first.
func (c *Config) fillDefaults() {
	setDuration(&c.Etcd.DialTimeout, DefaultDialTimeout)
	if c.Shards == 0 {
		c.Shards = fencing.DefaultShards
	}
	if c.Routing == "" {
		c.Routing = RoutingForward
	}
	setDuration(&c.Auth.Leeway, authn.DefaultLeeway)
	if c.Store.MaxConns == 0 {
		c.Store.MaxConns = DefaultMaxConns
	}
	setDuration(&c.Defaults.TTL, idempotency.DefaultTTL)
	setDuration(&c.Defaults.Lease, idempotency.DefaultLease)
	setDuration(&c.Defaults.UpstreamTimeout, DefaultUpstreamTimeout)
	for i := range c.Endpoints {
		e := &c.Endpoints[i]
		if e.Key == "" {
			e.Key = KeyRequired
		}
		setDuration(&e.TTL, c.Defaults.TTL)
		setDuration(&e.Lease, c.Defaults.Lease)
		setDuration(&e.UpstreamTimeout, c.Defaults.UpstreamTimeout)
		if e.MaxRequestBytes == 0 {
			e.MaxRequestBytes = idempotency.DefaultMaxRequestBytes
		}
		if e.MaxResponseBytes == 0 {
			e.MaxResponseBytes = idempotency.DefaultMaxResponseBytes
		}
		if e.Failover == "" {
			e.Failover = idempotency.FailoverReject
		}
	}
}

// setDuration sets *d to def if it is zero. A zero duration is never a
// useful setting for these fields, so zero means "unset".
func setDuration(d *time.Duration, def time.Duration) {
	if *d == 0 {
		*d = def
	}
}
