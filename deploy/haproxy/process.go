package haproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/idemcoord/idemcoord/internal/freeport"
)

// ErrNotInstalled means no haproxy binary was found.
var ErrNotInstalled = errors.New(`haproxy: not installed; install the Debian package "haproxy" (apt-get install -y haproxy)`)

// Binary returns the path of the haproxy binary: on PATH, else in
// /usr/sbin (Debian's place, often not on a user's PATH).
func Binary() (string, error) {
	if p, err := exec.LookPath("haproxy"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/haproxy"); err == nil {
		return "/usr/sbin/haproxy", nil
	}
	return "", ErrNotInstalled
}

// Entry is a running haproxy process serving the global entry.
type Entry struct {
	// URL is the entry's base URL, such as "http://127.0.0.1:7110".
	URL string

	cfg    Config
	dir    string
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // Wait's result, once exited is closed
}

// startTimeout bounds haproxy's start: config check, bind.
const startTimeout = 10 * time.Second

// Start renders c into a directory of its own (with an admin socket,
// whatever c.AdminSocket says) and runs haproxy in the foreground on it,
// its log lines (one per request, see the template's log-format) going to
// logs (nil: discarded). A Listen port of 0 is replaced by a free port.
// It returns once the entry accepts connections; Close stops it.
func Start(ctx context.Context, c Config, logs io.Writer) (*Entry, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	if c.Listen, err = freePort(c.Listen); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "idementry")
	if err != nil {
		return nil, err
	}
	c.AdminSocket = filepath.Join(dir, "admin.sock")
	text, err := Render(c)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, text, 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if out, err := exec.CommandContext(ctx, bin, "-c", "-q", "-f", path).CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("haproxy: the rendered configuration does not load: %v\n%s", err, out)
	}
	if logs == nil {
		logs = io.Discard
	}
	e := &Entry{URL: "http://" + c.Listen, cfg: c, dir: dir, exited: make(chan struct{})}
	// -db: stay in the foreground, so the process is this one's child.
	e.cmd = exec.Command(bin, "-db", "-f", path)
	e.cmd.Stdout, e.cmd.Stderr = logs, logs
	e.cmd.SysProcAttr = sysProcAttr()
	if err := e.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("haproxy: %w", err)
	}
	go func() {
		e.err = e.cmd.Wait()
		close(e.exited)
	}()
	deadline := time.Now().Add(startTimeout)
	for {
		conn, err := net.DialTimeout("tcp", c.Listen, 200*time.Millisecond)
		if err == nil {
			conn.Close()
			return e, nil
		}
		select {
		case <-e.exited:
			os.RemoveAll(dir)
			return nil, fmt.Errorf("haproxy exited during start: %v", e.err)
		case <-ctx.Done():
			e.Close()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			e.Close()
			return nil, fmt.Errorf("haproxy: not listening on %s within %v", c.Listen, startTimeout)
		}
	}
}

// freePort replaces a port of 0 in listen by a free one; on the loopback
// address one below the kernel's ephemeral range (freeport), where no
// outgoing connection takes it before haproxy binds it.
func freePort(listen string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("haproxy: Listen %q: want host:port: %v", listen, err)
	}
	if port != "0" {
		return listen, nil
	}
	if host == "127.0.0.1" {
		p, err := freeport.One()
		if err != nil {
			return "", err
		}
		return net.JoinHostPort(host, strconv.Itoa(p)), nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Close stops haproxy (SIGTERM: it closes its listeners and ends; SIGKILL
// after 5 s) and removes its directory.
func (e *Entry) Close() error {
	select {
	case <-e.exited:
	default:
		e.cmd.Process.Signal(os.Interrupt)
		select {
		case <-e.exited:
		case <-time.After(5 * time.Second):
			e.cmd.Process.Kill()
			<-e.exited
		}
	}
	return os.RemoveAll(e.dir)
}

// SetState sets a region's administrative state through the admin socket:
// "drain" (no new requests; those running finish), "maint" (none at all)
// or "ready" (back in rotation, if its checks pass). For maintenance by
// hand, and for tests that need a request to land in one region.
func (e *Entry) SetState(ctx context.Context, region, state string) error {
	switch state {
	case "ready", "drain", "maint":
	default:
		return fmt.Errorf("haproxy: state %q is not ready, drain or maint", state)
	}
	if !nameRE.MatchString(region) {
		return fmt.Errorf("haproxy: region %q is not a region name", region)
	}
	out, err := e.admin(ctx, "set server regions/"+region+" state "+state)
	if err != nil {
		return err
	}
	if s := strings.TrimSpace(out); s != "" {
		return fmt.Errorf("haproxy: set server %s state %s: %s", region, state, s)
	}
	return nil
}

// admin sends one command to the admin socket and returns its answer.
func (e *Entry) admin(ctx context.Context, cmd string) (string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", e.cfg.AdminSocket)
	if err != nil {
		return "", fmt.Errorf("haproxy: admin socket: %w", err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	if _, err := io.WriteString(conn, cmd+"\n"); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	return string(b), err
}

// Up returns, per region, whether the entry currently sends it requests
// (HAProxy's operational state "running"), from the admin socket.
func (e *Entry) Up(ctx context.Context) (map[string]bool, error) {
	out, err := e.admin(ctx, "show servers state regions")
	if err != nil {
		return nil, err
	}
	// "1" (the format version), a "# be_id be_name srv_id srv_name
	// srv_addr srv_op_state ..." header, then a line per server; op state
	// 2 is running.
	up := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || strings.HasPrefix(f[0], "#") {
			continue
		}
		up[f[3]] = f[5] == "2"
	}
	if len(up) == 0 {
		return nil, fmt.Errorf("haproxy: admin socket listed no servers: %q", out)
	}
	return up, nil
}
