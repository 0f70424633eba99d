// Package haproxy renders the idemcoord global entry, an HAProxy
// configuration that puts one address in front of every region's gateway,
// and runs HAProxy with it as a process (for the dev cluster, drills and
// tests). The configuration health-checks each region's /readyz, sends
// each request to a healthy region, and never resends a request that may
// have reached a region: see README.md beside this file.
package haproxy

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"text/template"
	"time"
)

// Defaults of Config's zero fields.
const (
	// DefaultConnectTimeout bounds connecting to a region; a region that
	// does not accept within it is skipped for this request.
	DefaultConnectTimeout = time.Second
	// DefaultServerTimeout bounds waiting for a region's answer when
	// Config.UpstreamTimeout is not set: longer than a gateway's longest
	// for any upstream timeout up to 55 s.
	DefaultServerTimeout = 60 * time.Second
	// AnswerSlack is what a live gateway may add to the endpoint's
	// upstream timeout before its answer leaves (a move or failover hold
	// of at most 2 s, the store writes around the call); with
	// Config.UpstreamTimeout set, ServerTimeout defaults to their sum.
	AnswerSlack = 2 * time.Second
	// DefaultClientTimeout bounds a client's silence.
	DefaultClientTimeout = 65 * time.Second
	// DefaultCheckInterval is the /readyz check period of a healthy
	// region; a failing one is checked twice as often. It also bounds
	// one check: a /readyz slower than it fails.
	DefaultCheckInterval = 500 * time.Millisecond
	// CheckFall is how many failed checks in a row take a region out
	// (HAProxy's fall), and how many good ones bring it back (rise).
	CheckFall = 2
	// DefaultMaxConn caps concurrent client connections.
	DefaultMaxConn = 4096
)

// Region is one region's gateway as the entry reaches it.
type Region struct {
	// Name is the region's name (the server name in HAProxy's logs and
	// stats): 1 to 32 of [a-z0-9-].
	Name string
	// Addr is the gateway's host:port.
	Addr string
}

// Config is what the rendered configuration depends on.
type Config struct {
	// Listen is the entry's bind address, such as "127.0.0.1:8080" or
	// ":80". Required.
	Listen string
	// Regions are the gateways behind the entry. At least one.
	Regions []Region
	// AdminSocket, if set, is the path of HAProxy's admin socket (server
	// states, draining a region by hand).
	AdminSocket string
	// UpstreamTimeout is the endpoints' upstream_timeout (the longest, if
	// they differ). When set, ServerTimeout defaults to it plus
	// AnswerSlack, so a keyed request whose region stopped answering is
	// sent to another region as soon as a live gateway would have
	// answered, instead of after DefaultServerTimeout.
	UpstreamTimeout time.Duration
	// ConnectTimeout, ServerTimeout, ClientTimeout and CheckInterval
	// default to the Default constants.
	ConnectTimeout, ServerTimeout, ClientTimeout, CheckInterval time.Duration
	// MaxConn defaults to DefaultMaxConn.
	MaxConn int
}

// RegionFromURL returns the Region for a gateway's base URL (http only:
// the rendered configuration speaks plain HTTP to the regions).
func RegionFromURL(name, base string) (Region, error) {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return Region{}, fmt.Errorf("haproxy: region %q: URL %q is not an http:// URL with a host", name, base)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "80")
	}
	return Region{Name: name, Addr: host}, nil
}

//go:embed haproxy.cfg.tmpl
var cfgTemplate string

var tmpl = template.Must(template.New("haproxy.cfg").Funcs(template.FuncMap{
	"ms": func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + "ms" },
}).Parse(cfgTemplate))

var nameRE = regexp.MustCompile(`^[a-z0-9-]{1,32}$`)

// DefaultConfig returns a Config with every default set; Listen and
// Regions are left to set.
func DefaultConfig() Config {
	return Config{}.withDefaults()
}

// withDefaults fills c's zero fields.
func (c Config) withDefaults() Config {
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.ServerTimeout == 0 {
		c.ServerTimeout = DefaultServerTimeout
		if c.UpstreamTimeout > 0 {
			c.ServerTimeout = c.UpstreamTimeout + AnswerSlack
		}
	}
	if c.ClientTimeout == 0 {
		c.ClientTimeout = DefaultClientTimeout
	}
	if c.CheckInterval == 0 {
		c.CheckInterval = DefaultCheckInterval
	}
	if c.MaxConn == 0 {
		c.MaxConn = DefaultMaxConn
	}
	return c
}

// Validate names the first unusable field of c and says why.
func (c Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("haproxy: Listen %q: want host:port: %v", c.Listen, err)
	}
	if len(c.Regions) == 0 {
		return errors.New("haproxy: Regions: at least one region is required")
	}
	seen := map[string]bool{}
	for i, r := range c.Regions {
		if !nameRE.MatchString(r.Name) {
			return fmt.Errorf("haproxy: Regions[%d].Name: must be 1 to 32 of [a-z0-9-], got %q", i, r.Name)
		}
		if seen[r.Name] {
			return fmt.Errorf("haproxy: Regions[%d].Name: %q is listed twice", i, r.Name)
		}
		seen[r.Name] = true
		if host, port, err := net.SplitHostPort(r.Addr); err != nil || host == "" || port == "" {
			return fmt.Errorf("haproxy: Regions[%d].Addr: want host:port, got %q", i, r.Addr)
		}
	}
	if c.UpstreamTimeout < 0 {
		return fmt.Errorf("haproxy: UpstreamTimeout: %v is negative", c.UpstreamTimeout)
	}
	d := c.withDefaults()
	for name, v := range map[string]time.Duration{"ConnectTimeout": d.ConnectTimeout, "ServerTimeout": d.ServerTimeout,
		"ClientTimeout": d.ClientTimeout, "CheckInterval": d.CheckInterval} {
		if v < time.Millisecond {
			return fmt.Errorf("haproxy: %s: %v is below 1ms", name, v)
		}
	}
	if d.MaxConn < 1 {
		return fmt.Errorf("haproxy: MaxConn: %d is not positive", c.MaxConn)
	}
	return nil
}

// Render returns the HAProxy configuration for c.
func Render(c Config) ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	d := c.withDefaults()
	var buf bytes.Buffer
	err := tmpl.Execute(&buf, struct {
		Config
		FastInterval, CheckTimeout time.Duration
		Fall                       int
	}{d, d.CheckInterval / 2, d.CheckInterval, CheckFall})
	return buf.Bytes(), err
}

// SilentOutWithin is, for c, the longest a region that stops answering
// (a paused process: its kernel still accepts connections) stays in the
// entry's rotation: until its next check, then CheckFall checks that each
// time out after CheckInterval, the later ones CheckInterval/2 apart. A
// keyed request sent to such a region is sent again elsewhere when
// ServerTimeout strikes; when the region is already out by then, the
// retry cannot go to it (the retry avoids only the server it left). So
// the defaults keep this under AnswerSlack, which every ServerTimeout
// derived from an upstream timeout exceeds.
func SilentOutWithin(c Config) time.Duration {
	d := c.withDefaults()
	return d.CheckInterval + CheckFall*d.CheckInterval + (CheckFall-1)*(d.CheckInterval/2)
}
