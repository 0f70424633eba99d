package config

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idemcoord/idemcoord/authn"
)

// FieldError is one invalid field: its path in the file
// ("endpoints[1].lease") and why it is invalid.
type FieldError struct {
	// Path names the field as written in YAML, with list indexes.
	Path string
	// Reason says what is wrong and, where it is not obvious, why it
	// matters.
	Reason string
	// Line is the line of the file the problem was found on, or 0 when
	// the problem is not tied to one line (a missing field, a check made
	// by Validate on a Config).
	Line int
}

// Error returns "path: reason".
func (e FieldError) Error() string { return e.Path + ": " + e.Reason }

// Located returns "path: reason (line N)", or Error's form when the
// problem is on no line of the file: what idemd check-config and idemctl
// --config print.
func (e FieldError) Located() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s (line %d)", e.Error(), e.Line)
	}
	return e.Error()
}

// ValidationError lists every problem of a configuration file: the fields
// that could not be decoded, in file order, then the invalid values.
type ValidationError struct {
	// Errors holds one entry per problem; never empty.
	Errors []FieldError
}

// Error returns the problems one per line.
func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		lines[i] = fe.Error()
	}
	return strings.Join(lines, "\n")
}

// problems collects FieldErrors.
type problems []FieldError

// add records a problem at path.
func (p *problems) add(path, format string, args ...any) {
	*p = append(*p, FieldError{Path: path, Reason: fmt.Sprintf(format, shortDurations(args)...)})
}

// err returns the problems as a *ValidationError, or nil if there are none.
func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return &ValidationError{Errors: p}
}

// ByLine returns the problems in the order of their lines in the file, as
// a reader goes through it; problems tied to no line (a missing field)
// come last, each group in the order found.
func (e *ValidationError) ByLine() []FieldError {
	errs := slices.Clone(e.Errors)
	slices.SortStableFunc(errs, func(a, b FieldError) int {
		switch {
		case a.Line == b.Line:
			return 0
		case a.Line == 0:
			return 1
		case b.Line == 0:
			return -1
		}
		return a.Line - b.Line
	})
	return errs
}

var (
	regionRE  = regexp.MustCompile(`^[a-z0-9-]{1,32}$`)
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// Validate reports every invalid field at once, as a *ValidationError. It
// expects defaults to be filled in (Parse does that): a zero duration or size
// is reported, not defaulted. It does no I/O; AuthConfig reads the secret.
func (c *Config) Validate() error {
	var p problems
	if !regionRE.MatchString(c.Region) {
		p.add("region", "must be 1 to 32 of [a-z0-9-], got %q", c.Region)
	}
	checkListen(&p, c.Listen)
	checkURL(&p, "upstream", c.Upstream, true)
	if len(c.WorkerID) > 128 || strings.ContainsFunc(c.WorkerID, isBadRune) {
		p.add("worker_id", "must be at most 128 printable characters")
	}
	c.checkStoreBackend(&p)
	if c.Store.MaxConns <= 0 {
		p.add("store.max_conns", "must be positive, got %d", c.Store.MaxConns)
	}
	for i, ep := range c.Etcd.Endpoints {
		checkURL(&p, fmt.Sprintf("etcd.endpoints[%d]", i), ep, false)
	}
	positive(&p, "etcd.dial_timeout", c.Etcd.DialTimeout)
	positive(&p, "store.connect_timeout", c.Store.ConnectTimeout)
	if gc := c.Store.GroupCommit; gc.MaxBatch < 0 || gc.MaxBatch > MaxGroupCommitBatch {
		p.add("store.group_commit.max_batch", "must be between 1 (off) and %d, got %d", MaxGroupCommitBatch, gc.MaxBatch)
	}
	if c.Store.GroupCommit.MaxQueueWait < 0 {
		p.add("store.group_commit.max_queue_wait", "must be positive, got %s", c.Store.GroupCommit.MaxQueueWait)
	}
	checkEtcdTimings(&p, c.Etcd)
	c.Auth.check(&p)
	positive(&p, "defaults.ttl", c.Defaults.TTL)
	positive(&p, "defaults.lease", c.Defaults.Lease)
	positive(&p, "defaults.upstream_timeout", c.Defaults.UpstreamTimeout)
	checkLease(&p, "defaults", c.Defaults.TTL, c.Defaults.Lease, c.Defaults.UpstreamTimeout)
	c.checkRegions(&p)
	c.checkEndpoints(&p)
	c.checkProduction(&p)
	return p.err()
}

// check validates the auth section.
func (a Auth) check(p *problems) {
	if a.Issuer == "" {
		p.add("auth.issuer", "required")
	}
	if a.Audience == "" {
		p.add("auth.audience", "required")
	}
	switch {
	case a.HS256SecretFile == "" && a.HS256SecretEnv == "" && len(a.PublicKeyFiles) == 0:
		p.add("auth", "one of hs256_secret_file, hs256_secret_env, public_key_files is required")
	case a.HS256SecretFile != "" && a.HS256SecretEnv != "":
		p.add("auth", "hs256_secret_file and hs256_secret_env exclude each other; set one")
	}
	if a.HS256SecretEnv != "" && !envNameRE.MatchString(a.HS256SecretEnv) {
		// Never echo the value: it may be the secret itself, pasted here.
		p.add("auth.hs256_secret_env", "not an environment variable name ([A-Za-z_][A-Za-z0-9_]*); give the name, not the secret")
	}
	for i, f := range a.PublicKeyFiles {
		if f == "" {
			p.add(fmt.Sprintf("auth.public_key_files[%d]", i), "empty path")
		}
	}
	if a.Leeway < 0 || a.Leeway > authn.MaxLeeway {
		p.add("auth.leeway", "must be within 0s and %s, got %s", authn.MaxLeeway, a.Leeway)
	}
}

// checkLease reports a lease that a live worker could outlast (the intent
// would run twice) or a TTL shorter than the lease. prefix is "defaults" or
// "endpoints[i]".
func checkLease(p *problems, prefix string, ttl, lease, upstream time.Duration) {
	if lease <= 0 || upstream <= 0 {
		return // reported as not positive
	}
	switch {
	case lease < upstream:
		p.add(prefix+".lease", "%s is shorter than upstream_timeout %s; a live worker would be taken over", lease, upstream)
	case lease == upstream:
		p.add(prefix+".lease", "%s equals upstream_timeout; it must be longer, or a live worker would be taken over", lease)
	}
	if ttl > 0 && lease > ttl {
		p.add(prefix+".ttl", "%s is shorter than lease %s; a record could expire while its worker runs", ttl, lease)
	}
}

// checkEtcdTimings reports a lease TTL etcd would refuse or round, or a
// negative confirmation delay (zero means each one's default).
func checkEtcdTimings(p *problems, e Etcd) {
	for _, ttl := range []struct {
		path string
		d    time.Duration
	}{{"etcd.liveness_ttl", e.LivenessTTL}, {"etcd.election_ttl", e.ElectionTTL}} {
		switch {
		case ttl.d == 0:
		case ttl.d < MinEtcdLeaseTTL:
			p.add(ttl.path, "must be at least %s (or unset for the default), got %s", MinEtcdLeaseTTL, ttl.d)
		case ttl.d%time.Second != 0:
			p.add(ttl.path, "must be whole seconds (etcd leases are), got %s", ttl.d)
		}
	}
	if e.ConfirmDelay < 0 {
		p.add("etcd.confirm_delay", "must not be negative, got %s", e.ConfirmDelay)
	}
	switch e.DownProbe {
	case "", DownProbePeer, DownProbeOff:
	default:
		p.add("etcd.down_probe", "must be %q or %q (or unset for %q), got %q", DownProbePeer, DownProbeOff, DownProbePeer, e.DownProbe)
	}
}

// positive reports a duration that is not positive.
func positive(p *problems, path string, d time.Duration) {
	if d <= 0 {
		p.add(path, "must be positive, got %s", d)
	}
}

// checkListen reports an address that is not host:port.
func checkListen(p *problems, addr string) {
	if addr == "" {
		p.add("listen", "required")
		return
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		p.add("listen", "%q is not host:port", addr)
		return
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || (n == 0 && port != "0") {
		p.add("listen", "port %q is not a number within 0-65535", port)
	}
}

// checkURL reports a value that is not an absolute http(s) URL. required
// reports an empty value.
func checkURL(p *problems, path, raw string, required bool) {
	if raw == "" {
		if required {
			p.add(path, "required")
		} else {
			p.add(path, "empty URL")
		}
		return
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		p.add(path, "%q is not a URL", raw)
	case u.Scheme != "http" && u.Scheme != "https":
		p.add(path, "%q: scheme must be http or https", raw)
	case u.Host == "":
		p.add(path, "%q: host required", raw)
	case u.RawQuery != "" || u.Fragment != "":
		p.add(path, "%q: must not have a query or fragment", raw)
	}
}

// isBadRune reports runes that do not belong in names written to logs and
// records.
func isBadRune(r rune) bool { return r < 0x20 || r == 0x7f }
