package patronilocal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/idemcoord/idemcoord/internal/freeport"
	"github.com/idemcoord/idemcoord/internal/pglocal"
)

var (
	// ErrNotInstalled is returned when no patroni command is found.
	ErrNotInstalled = errors.New(`patronilocal: the "patroni" command is not installed; install Patroni 4 from Debian trixie (apt-get install patroni/trixie python3-consul/trixie python3-ydiff/trixie python3-cdiff/trixie, with trixie as a low-priority apt source; .ci/run does this)`)
	// ErrTooOld is returned when the installed Patroni is older than 4.
	ErrTooOld = errors.New("patronilocal: Patroni older than 4 (Debian bookworm's 3.0.2 overwrites the leader key, patroni/patroni#2689, and can lose a promoted primary's history); install Patroni 4 from Debian trixie")
	// ErrUnknownMember is returned for a member name not in the config.
	ErrUnknownMember = errors.New("patronilocal: unknown member")
)

// Cluster is a running Patroni-managed PostgreSQL cluster.
type Cluster struct {
	cfg     Config
	dir     string
	ownDir  bool
	bindir  string
	patroni string
	cred    *syscall.Credential
	members []*member

	mu sync.Mutex // guards each member's proc
}

// member is one member's files, ports and current process.
type member struct {
	spec     MemberSpec
	dir      string
	pgPort   int
	restPort int
	proc     *process // nil while killed or stopped
}

func (m *member) dataDir() string { return filepath.Join(m.dir, "data") }

// Version returns the installed Patroni's version ("4.0.7"), ErrNotInstalled
// or ErrTooOld.
func Version(ctx context.Context) (string, error) {
	path, err := exec.LookPath("patroni")
	if err != nil {
		return "", ErrNotInstalled
	}
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("patronilocal: patroni --version: %w", err)
	}
	m := regexp.MustCompile(`(\d+)\.(\d+)(\.\d+)?`).FindString(string(out))
	major, _ := strconv.Atoi(strings.SplitN(m, ".", 2)[0])
	if m == "" {
		return "", fmt.Errorf("patronilocal: cannot read a version from %q", out)
	}
	if major < 4 {
		return m, fmt.Errorf("%w: found %s", ErrTooOld, m)
	}
	// Patroni's etcd3 DCS needs python3-etcd and python3-dnspython, which
	// the package only recommends through alternatives; without them
	// patroni exits at once ("Can not find suitable configuration of
	// distributed configuration store").
	if out, err := exec.CommandContext(ctx, "/usr/bin/python3", "-c", "import patroni.dcs.etcd3").CombinedOutput(); err != nil {
		return m, fmt.Errorf("%w: Patroni %s cannot load its etcd3 DCS (install python3-etcd and python3-dnspython): %v: %s", ErrNotInstalled, m, err, bytes.TrimSpace(out))
	}
	return m, nil
}

// Start writes each member's Patroni configuration, starts the first
// member (which bootstraps the cluster and is its first primary), then the
// others (which clone it), and waits until the cluster has a primary and a streaming synchronous
// standby (with strict synchronous mode no write commits before then).
// Stop it with Stop. It refuses Patroni older than 4.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if _, err := Version(ctx); err != nil {
		return nil, err
	}
	patroni, _ := exec.LookPath("patroni")
	bindir, err := pglocal.BinDir()
	if err != nil {
		return nil, err
	}
	Sweep()
	c := &Cluster{cfg: cfg, dir: cfg.BaseDir, bindir: bindir, patroni: patroni}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("/tmp", dirPrefix); err != nil {
			return nil, err
		}
		c.ownDir = true
		// MkdirTemp makes it 0700; postgres must reach its member dirs.
		if err := os.Chmod(c.dir, 0o755); err != nil {
			os.RemoveAll(c.dir)
			return nil, err
		}
	} else if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return nil, err
	}
	if err := c.setUp(); err != nil {
		c.Stop()
		return nil, err
	}
	c.cfg.logger().Info("patroni cluster starting", "scope", cfg.Scope, "members", len(c.members), "dir", c.dir)
	// The first member bootstraps alone, so it is the first primary (a
	// region's cluster starts with its primary in that region); the others
	// then clone it.
	if err := c.spawn(c.members[0]); err != nil {
		c.Stop()
		return nil, err
	}
	first := c.members[0].spec.Name
	if err := c.waitFor(ctx, func(ms []MemberStatus) bool {
		return len(ms) > 0 && ms[0].Name == first && ms[0].Role == RoleLeader && ms[0].State == StateRunning
	}); err != nil {
		logs := c.logTails()
		c.Stop()
		return nil, fmt.Errorf("patronilocal: %s did not bootstrap: %w\n%s", cfg.Scope, err, logs)
	}
	for _, m := range c.members[1:] {
		if err := c.spawn(m); err != nil {
			c.Stop()
			return nil, err
		}
	}
	if err := c.WaitHealthy(ctx); err != nil {
		logs := c.logTails()
		c.Stop()
		return nil, fmt.Errorf("patronilocal: %s did not become healthy: %w\n%s", cfg.Scope, err, logs)
	}
	return c, nil
}

// setUp makes each member's directory (owned by postgres when running as
// root: initdb refuses root) and configuration, on free ports.
func (c *Cluster) setUp() error {
	if err := os.WriteFile(filepath.Join(c.dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.dir, reaperFile), []byte(reaperPy), 0o644); err != nil {
		return err
	}
	uid, gid := -1, -1
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return fmt.Errorf("patronilocal: running as root needs the system user \"postgres\" (from the Debian package postgresql): %w", err)
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	ports, err := freePorts(2 * len(c.cfg.Members))
	if err != nil {
		return err
	}
	for i, spec := range c.cfg.Members {
		m := &member{spec: spec, dir: filepath.Join(c.dir, spec.Name), pgPort: ports[2*i], restPort: ports[2*i+1]}
		if err := os.MkdirAll(m.dir, 0o700); err != nil {
			return err
		}
		if c.cred != nil {
			if err := os.Chown(m.dir, uid, gid); err != nil {
				return err
			}
		}
		y, err := c.memberYAML(m)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(m.dir, "patroni.yml"), y, 0o644); err != nil {
			return err
		}
		c.members = append(c.members, m)
	}
	return nil
}

// spawn starts m's patroni in its own process group, as postgres, with a
// clean environment: an inherited PGPASSWORD (or any PG* variable) breaks
// replication and pg_rewind logins. exec.Cmd passes no descriptor but
// stdin/stdout/stderr, so the daemon holds no lock of ours.
func (c *Cluster) spawn(m *member) error {
	logf, err := os.OpenFile(filepath.Join(m.dir, "patroni.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	// Through the reaper (reaper.go), so an exited postmaster is reaped at
	// once and a switchover's demotion does not wait on its zombie.
	cmd := exec.Command("/usr/bin/python3", filepath.Join(c.dir, reaperFile), c.patroni, filepath.Join(m.dir, "patroni.yml"))
	cmd.Dir = m.dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + m.dir, "LANG=C.UTF-8", "LC_ALL=C.UTF-8"}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: c.cred}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("patronilocal: start %s: %w", m.spec.Name, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	os.WriteFile(filepath.Join(m.dir, pidFile), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
	c.mu.Lock()
	m.proc = p
	c.mu.Unlock()
	return nil
}

// member returns the member named name.
func (c *Cluster) member(name string) (*member, error) {
	for _, m := range c.members {
		if m.spec.Name == name {
			return m, nil
		}
	}
	return nil, fmt.Errorf("%w %q in %s", ErrUnknownMember, name, c.cfg.Scope)
}

// Members returns the configured members, in Config order.
func (c *Cluster) Members() []MemberSpec { return append([]MemberSpec(nil), c.cfg.Members...) }

// Quorum reports whether the cluster runs quorum commit (Config.Quorum).
func (c *Cluster) Quorum() bool { return c.cfg.Quorum }

// Scope returns the cluster's Patroni scope.
func (c *Cluster) Scope() string { return c.cfg.Scope }

// LeaderKey returns the DCS (etcd) key that holds the cluster's leader:
// Patroni keeps it under a lease of ttl seconds, renewed every loop_wait.
func (c *Cluster) LeaderKey() string { return c.cfg.namespace() + c.cfg.Scope + "/leader" }

// Dir returns the directory holding the members' data and logs.
func (c *Cluster) Dir() string { return c.dir }

// DSN returns a multi-host connection string over every member that
// connects only to the one accepting writes (target_session_attrs is
// checked when connecting, not afterwards).
func (c *Cluster) DSN() string {
	hosts := make([]string, len(c.members))
	for i, m := range c.members {
		hosts[i] = "127.0.0.1:" + strconv.Itoa(m.pgPort)
	}
	return "postgres://postgres@" + strings.Join(hosts, ",") + "/postgres?sslmode=disable&target_session_attrs=read-write"
}

// MemberDSN returns a connection string to member name alone.
func (c *Cluster) MemberDSN(name string) (string, error) {
	m, err := c.member(name)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", m.pgPort), nil
}

// ListenAddr returns the host:port member name's PostgreSQL listens on
// (not the address it advertises: see Config.Advertise).
func (c *Cluster) ListenAddr(name string) (string, error) {
	m, err := c.member(name)
	if err != nil {
		return "", err
	}
	return "127.0.0.1:" + strconv.Itoa(m.pgPort), nil
}

// RESTURLs returns every member's Patroni REST base URL, in Config order.
func (c *Cluster) RESTURLs() []string {
	out := make([]string, len(c.members))
	for i, m := range c.members {
		out[i] = m.restURL()
	}
	return out
}

// MemberEndpoint is where one member listens.
type MemberEndpoint struct {
	MemberSpec
	// Addr is the member's PostgreSQL host:port.
	Addr string
	// REST is the member's Patroni REST base URL.
	REST string
}

// Endpoints returns every member's addresses, in Config order.
func (c *Cluster) Endpoints() []MemberEndpoint {
	out := make([]MemberEndpoint, len(c.members))
	for i, m := range c.members {
		out[i] = MemberEndpoint{MemberSpec: m.spec, Addr: "127.0.0.1:" + strconv.Itoa(m.pgPort), REST: m.restURL()}
	}
	return out
}

func (m *member) restURL() string { return "http://127.0.0.1:" + strconv.Itoa(m.restPort) }

// Stop kills every member (Patroni and PostgreSQL, SIGKILL: the cluster is
// throwaway) and removes the directory if Start made it.
func (c *Cluster) Stop() error {
	var errs []error
	for _, m := range c.members {
		if err := c.kill(m); err != nil {
			errs = append(errs, err)
		}
	}
	if c.ownDir {
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// logTails returns the end of every member's Patroni log, for errors.
func (c *Cluster) logTails() string {
	var b strings.Builder
	for _, m := range c.members {
		log, _ := os.ReadFile(filepath.Join(m.dir, "patroni.log"))
		if len(log) > 1500 {
			log = log[len(log)-1500:]
		}
		fmt.Fprintf(&b, "--- %s patroni.log:\n%s\n", m.spec.Name, log)
	}
	return b.String()
}

// freePorts returns n distinct free loopback ports below the kernel's
// ephemeral range (freeport.Pick): a port from inside it can be taken by
// any outgoing connection before the member binds it.
func freePorts(n int) ([]int, error) { return freeport.Pick(n) }

// pollInterval is how often waits re-read Patroni's REST API.
const pollInterval = 100 * time.Millisecond
