package patronilocal

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// Patroni 4 refuses a configuration below these floors (it raises them
// silently or rejects the config), so Validate rejects them up front.
const (
	// MinTTL is Patroni 4's floor for the leader key's lease.
	MinTTL = 20 * time.Second
	// MinRetryTimeout is Patroni 4's floor for DCS and PostgreSQL retries.
	MinRetryTimeout = 3 * time.Second
	// MinLoopWait is Patroni 4's floor for the HA loop's period.
	MinLoopWait = time.Second
)

// Defaults of DefaultConfig.
const (
	// DefaultTTL is the leader key's lease: an unplanned primary loss
	// costs about this long before a standby may take over. Patroni 4's
	// floor, the fastest failover it allows.
	DefaultTTL = MinTTL
	// DefaultLoopWait is the HA loop's period: a short loop notices an
	// expired leader key soon after its ttl runs out, at the cost of a
	// DCS read per member per second (three members idle at ~4% of a core).
	DefaultLoopWait = MinLoopWait
	// DefaultRetryTimeout is how long Patroni retries the DCS and
	// PostgreSQL before demoting a primary it cannot confirm: 9 s, as
	// deploy/patroni runs (ttl 20 >= loop_wait 1 + 2 x 9). Patroni's floor
	// of 3 s made a member on a loaded machine drop its leader key on a
	// 3 s etcd stall, leaving its cluster without a primary for a ttl; an
	// unplanned loss still costs the ttl, not this.
	DefaultRetryTimeout = 9 * time.Second
)

// MemberSpec is one member of a cluster.
type MemberSpec struct {
	// Name is the member's Patroni name, unique in the cluster: letters,
	// digits, '-' and '_'.
	Name string
	// Region is the region the member stands for; it is written to the
	// member's Patroni tags and reported by Status.
	Region string
	// EtcdEndpoints, when set, are the DCS endpoints this member's Patroni
	// dials instead of Config.EtcdEndpoints (a drill puts a proxy per
	// member in front of etcd, to cut one member from the DCS alone).
	EtcdEndpoints []string
}

// Config describes one Patroni-managed PostgreSQL cluster.
type Config struct {
	// Scope is the Patroni cluster name (its DCS key under Namespace).
	Scope string
	// Namespace is the DCS prefix, e.g. "/idemcoord-dev/" (default
	// "/service/", Patroni's own).
	Namespace string
	// Members are the cluster's members; at least two (strict synchronous
	// mode needs a standby to commit).
	Members []MemberSpec
	// EtcdEndpoints are the etcd client URLs (http://host:port) of the
	// DCS; Patroni speaks etcd's v3 API (its "etcd3" DCS).
	EtcdEndpoints []string
	// BaseDir holds one directory per member (data, socket, logs). Empty:
	// a new directory under /tmp, removed by Stop. Keep it short: the
	// socket path must stay under 107 bytes.
	BaseDir string
	// TTL is the leader key's lease (default DefaultTTL, floor MinTTL).
	TTL time.Duration
	// LoopWait is the HA loop's period (default DefaultLoopWait, floor
	// MinLoopWait).
	LoopWait time.Duration
	// RetryTimeout bounds DCS and PostgreSQL retries (default
	// DefaultRetryTimeout, floor MinRetryTimeout). Patroni requires
	// LoopWait + 2*RetryTimeout <= TTL.
	RetryTimeout time.Duration
	// Async turns synchronous replication off (synchronous_mode: false):
	// a commit is acknowledged before any standby has it, so a failover
	// can lose acknowledged writes. Only for drills that must catch that.
	Async bool
	// Strict sets synchronous_mode_strict: with no synchronous standby,
	// commits wait instead of going asynchronous (RPO 0, at the cost of
	// availability). DefaultConfig sets it.
	Strict bool
	// Quorum sets quorum commit (synchronous_mode: quorum): a commit
	// waits for ANY SyncStandbys of the standbys rather than for one named
	// synchronous standby, and a failover promotes only a member that
	// heard from enough of the others to be sure it holds every
	// acknowledged commit. With three members, the loss of either
	// standby (its region) stalls no commit, where in synchronous_mode on
	// the loss of the named one stalls commits until Patroni names the
	// other. With Strict, no standby left still means writes wait.
	Quorum bool
	// SyncStandbys is synchronous_node_count: how many standbys each
	// commit waits for (0: 1). Cluster.SetSyncStandbys changes it on a
	// running cluster (a planned switchover raises it to 2 for its
	// length: docs/runbook.md).
	SyncStandbys int
	// Parameters are extra postgresql.conf settings for every member.
	Parameters map[string]string
	// Logger receives the cluster's lifecycle events (default: discard).
	Logger *slog.Logger
	// Advertise, when set, returns the address a member advertises as its
	// postgresql.connect_address (what its replicas, pg_rewind and the
	// DCS's conn_url dial), given the address it listens on: a drill puts
	// a proxy there, to slow or cut the member's replication links.
	// Default: the listen address.
	Advertise func(member, listen string) (string, error)
}

// DefaultConfig returns a config with Patroni 4's fastest allowed timers
// and strict synchronous replication; the caller fills Scope, Members and
// EtcdEndpoints.
func DefaultConfig() Config {
	return Config{
		Namespace:    "/service/",
		TTL:          DefaultTTL,
		LoopWait:     DefaultLoopWait,
		RetryTimeout: DefaultRetryTimeout,
		Strict:       true,
	}
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,30}$`)

// Validate reports every bad field at once, each by name and why.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("patronilocal: %s: %s", field, fmt.Sprintf(format, args...)))
	}
	if !namePattern.MatchString(c.Scope) {
		bad("scope", "%q must be 1-31 letters, digits, '-' or '_'", c.Scope)
	}
	if c.Namespace != "" && (!strings.HasPrefix(c.Namespace, "/") || !strings.HasSuffix(c.Namespace, "/")) {
		bad("namespace", "%q must start and end with '/'", c.Namespace)
	}
	if len(c.Members) < 2 {
		bad("members", "%d given; at least 2 (strict synchronous mode needs a standby to commit)", len(c.Members))
	}
	seen := map[string]bool{}
	for i, m := range c.Members {
		if !namePattern.MatchString(m.Name) {
			bad(fmt.Sprintf("members[%d].name", i), "%q must be 1-31 letters, digits, '-' or '_'", m.Name)
		}
		if seen[m.Name] {
			bad(fmt.Sprintf("members[%d].name", i), "%q appears twice", m.Name)
		}
		seen[m.Name] = true
	}
	if len(c.EtcdEndpoints) == 0 {
		bad("etcd_endpoints", "empty; Patroni needs etcd as its DCS")
	}
	for i, e := range c.EtcdEndpoints {
		if _, err := etcdHost(e); err != nil {
			bad(fmt.Sprintf("etcd_endpoints[%d]", i), "%v", err)
		}
	}
	for i, m := range c.Members {
		for j, e := range m.EtcdEndpoints {
			if _, err := etcdHost(e); err != nil {
				bad(fmt.Sprintf("members[%d].etcd_endpoints[%d]", i, j), "%v", err)
			}
		}
	}
	if len(c.BaseDir) > 60 {
		bad("base_dir", "%q is %d bytes; keep it under 60 (PostgreSQL's socket path limit is 107)", c.BaseDir, len(c.BaseDir))
	}
	if c.TTL < MinTTL {
		bad("ttl", "%v is below Patroni 4's floor of %v", c.TTL, MinTTL)
	}
	if c.LoopWait < MinLoopWait {
		bad("loop_wait", "%v is below Patroni 4's floor of %v", c.LoopWait, MinLoopWait)
	}
	if c.RetryTimeout < MinRetryTimeout {
		bad("retry_timeout", "%v is below Patroni 4's floor of %v", c.RetryTimeout, MinRetryTimeout)
	}
	if c.LoopWait+2*c.RetryTimeout > c.TTL {
		bad("ttl", "%v must be at least loop_wait + 2*retry_timeout (%v), or Patroni rejects it", c.TTL, c.LoopWait+2*c.RetryTimeout)
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"ttl", c.TTL}, {"loop_wait", c.LoopWait}, {"retry_timeout", c.RetryTimeout}} {
		if d.v%time.Second != 0 {
			bad(d.field, "%v is not whole seconds (Patroni counts in seconds)", d.v)
		}
	}
	if c.SyncStandbys < 0 || len(c.Members) > 1 && c.SyncStandbys > len(c.Members)-1 {
		bad("sync_standbys", "%d: want 1 to %d (the members other than the primary), or 0 for 1", c.SyncStandbys, len(c.Members)-1)
	}
	if c.Async && c.Strict {
		bad("strict", "synchronous_mode_strict needs synchronous replication; Async is set")
	}
	if c.Async && c.Quorum {
		bad("quorum", "quorum commit is synchronous replication; Async is set")
	}
	return errors.Join(errs...)
}

// etcdHost turns an etcd client URL into Patroni's host:port.
func etcdHost(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("%q is not a URL like http://127.0.0.1:2379", endpoint)
	}
	if u.Scheme != "http" {
		return "", fmt.Errorf("%q: only http endpoints are supported", endpoint)
	}
	return u.Host, nil
}

func (c Config) namespace() string {
	if c.Namespace == "" {
		return "/service/"
	}
	return c.Namespace
}

func (c Config) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

// syncMode is Patroni's synchronous_mode: false (Async), "quorum"
// (Quorum) or true.
func (c Config) syncMode() any {
	switch {
	case c.Async:
		return false
	case c.Quorum:
		return "quorum"
	}
	return true
}
