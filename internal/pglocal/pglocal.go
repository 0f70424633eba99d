// Package pglocal starts and stops a throwaway PostgreSQL server on the
// loopback interface, for tests and for the local dev cluster. It runs
// initdb and pg_ctl from the PostgreSQL installation on the machine, as the
// postgres user when the caller is root (initdb refuses to run as root).
package pglocal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/idemcoord/idemcoord/internal/freeport"
)

// ErrNotInstalled is returned when no PostgreSQL server binaries are found.
var ErrNotInstalled = errors.New("pglocal: PostgreSQL server binaries (initdb, pg_ctl) not found; install the Debian package \"postgresql\" (apt-get install -y postgresql) or set IDEMCOORD_TEST_DATABASE_URL")

// Server is one throwaway PostgreSQL server.
type Server struct {
	dir           string
	bindir        string
	port          int
	cred          *syscall.Credential
	sharedBuffers string
	// durable runs the server with fsync, synchronous_commit and
	// full_page_writes on (Durable).
	durable bool
}

// DefaultSharedBuffers is the shared_buffers a server gets unless an
// Option says otherwise: small, since tests start many servers.
const DefaultSharedBuffers = "256MB"

// Option changes how Start sets a server up.
type Option func(*Server) error

// sizeSetting is a PostgreSQL memory size: a number and an optional unit.
var sizeSetting = regexp.MustCompile(`^[1-9][0-9]*(kB|MB|GB|TB)?$`)

// SharedBuffers sets the server's shared_buffers (a PostgreSQL size such
// as "6GB"), for a benchmark whose tables should be cached as a sized
// deployment's would be.
func SharedBuffers(size string) Option {
	return func(s *Server) error {
		if !sizeSetting.MatchString(size) {
			return fmt.Errorf("pglocal: shared_buffers %q is not a PostgreSQL size (a number with kB, MB, GB or TB, e.g. 6GB)", size)
		}
		s.sharedBuffers = size
		return nil
	}
}

// Durable runs the server as a production one writes: fsync,
// synchronous_commit and full_page_writes on (the default is off, for
// speed), so a benchmark can measure what a commit's WAL flush costs.
func Durable() Option {
	return func(s *Server) error {
		s.durable = true
		return nil
	}
}

// BinDir finds the directory holding initdb and pg_ctl.
func BinDir() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		d := string(bytes.TrimSpace(out))
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", ErrNotInstalled
}

// Start initialises a data directory under a new temporary directory and
// starts the server on a free loopback port. Stop it with Close.
func Start(ctx context.Context, opts ...Option) (*Server, error) {
	bindir, err := BinDir()
	if err != nil {
		return nil, err
	}
	s := &Server{bindir: bindir, sharedBuffers: DefaultSharedBuffers}
	for _, o := range opts {
		if err := o(s); err != nil {
			return nil, err
		}
	}
	sweep(ctx, bindir)
	// Short parent: the unix socket path must stay under 107 bytes.
	dir, err := os.MkdirTemp("/tmp", dirPrefix)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.dir = dir
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("pglocal: running as root needs the system user \"postgres\" (from the Debian package postgresql): %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := s.run(ctx, "initdb", "-D", s.dataDir(), "-U", "postgres", "-A", "trust", "-E", "UTF8",
		"--locale=C", "--no-sync", "--no-instructions"); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := s.startOnFreePort(ctx); err != nil {
		s.stopStray()
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// pickPort picks the port Start tries next; tests replace it.
var pickPort = freeport.One

// bindAttempts is how many free ports Start tries before giving up.
const bindAttempts = 3

// startOnFreePort starts the server on a free port, and on another one
// when its port was taken between the pick and the server's bind.
func (s *Server) startOnFreePort(ctx context.Context) error {
	var err error
	for range bindAttempts {
		if s.port, err = pickPort(); err != nil {
			return err
		}
		os.Remove(filepath.Join(s.dir, "postgres.log"))
		if err = s.Resume(ctx); err == nil || !strings.Contains(err.Error(), "Address already in use") {
			return err
		}
	}
	return err
}

func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }

// Dir returns the server's directory: its data directory, socket and log.
func (s *Server) Dir() string { return s.dir }

// DSN returns a connection string for database db over TCP.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// Addr returns the server's TCP address.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Halt stops the server (fast shutdown: connections are cut), keeping its
// data; Resume starts it again on the same port. Tests use the pair to take
// the store away mid-run.
func (s *Server) Halt(ctx context.Context) error {
	return s.run(ctx, "pg_ctl", "-D", s.dataDir(), "-m", "fast", "-w", "stop")
}

// Resume starts a halted server on its port.
func (s *Server) Resume(ctx context.Context) error {
	// fsync off and a large max_connections: the server is throwaway, and
	// tests open many pools.
	// Durable turns the writes' safety back on.
	sync := "off"
	if s.durable {
		sync = "on"
	}
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=%[3]s -c synchronous_commit=%[3]s -c full_page_writes=%[3]s -c max_connections=400 -c shared_buffers=%s", s.port, s.dir, sync, s.sharedBuffers)
	return s.run(ctx, "pg_ctl", "-D", s.dataDir(), "-l", filepath.Join(s.dir, "postgres.log"), "-w", "-t", "60", "-o", opts, "start")
}

// Close stops the server and removes its files.
func (s *Server) Close() error {
	err := s.Halt(context.Background())
	if rmErr := os.RemoveAll(s.dir); err == nil {
		err = rmErr
	}
	return err
}

func (s *Server) run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(s.bindir, name), args...)
	cmd.Dir = s.dir
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "postgres.log"))
		return fmt.Errorf("pglocal: %s: %w\n%s\n%s", name, err, out, tail(log, 2000))
	}
	return nil
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// dirPrefix names every throwaway server's directory under /tmp, and
// ownerFile in it holds the pid of the process that started it.
const (
	dirPrefix = "idpg"
	ownerFile = "owner.pid"
)

// sweep stops and removes servers left behind by processes that died
// without closing them (a test binary killed by its timeout): each would
// otherwise hold memory and a port until the machine is recycled.
func sweep(ctx context.Context, bindir string) {
	dirs, _ := filepath.Glob(filepath.Join("/tmp", dirPrefix+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue // not ours, or still being created
		}
		pid, err := strconv.Atoi(string(b))
		if err != nil || pid <= 0 || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue // the owner is alive (or we cannot tell)
		}
		s := &Server{dir: dir, bindir: bindir}
		if fi, err := os.Stat(dir); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 {
				s.cred = &syscall.Credential{Uid: st.Uid, Gid: st.Gid}
			}
		}
		s.run(ctx, "pg_ctl", "-D", s.dataDir(), "-m", "immediate", "-w", "stop")
		os.RemoveAll(dir)
	}
}

// stopStray stops a postmaster that a cut-short pg_ctl may have started
// in its own session: it writes postmaster.pid within moments of starting,
// so wait briefly for the file and stop whatever it names.
func (s *Server) stopStray() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pidFile := filepath.Join(s.dataDir(), "postmaster.pid")
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(pidFile); err == nil {
			s.run(ctx, "pg_ctl", "-D", s.dataDir(), "-m", "immediate", "-w", "stop")
			return
		}
	}
}
