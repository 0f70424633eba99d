package patronilocal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// process is one running patroni daemon.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the daemon has exited and been reaped
}

// Files under the cluster and member directories: ownerFile holds the pid
// of the process that started the cluster, pidFile a member's patroni pid.
const (
	dirPrefix = "idpat"
	ownerFile = "owner.pid"
	pidFile   = "patroni.pid"
)

// Kill crashes member name as a machine loss would: SIGKILL of its
// Patroni (its whole process group) and of its postmaster and every
// PostgreSQL backend, at once. Restart brings it back.
func (c *Cluster) Kill(name string) error {
	m, err := c.member(name)
	if err != nil {
		return err
	}
	c.cfg.logger().Info("patroni member killed", "scope", c.cfg.Scope, "member", name)
	return c.kill(m)
}

func (c *Cluster) kill(m *member) error {
	c.mu.Lock()
	p := m.proc
	m.proc = nil
	c.mu.Unlock()
	if p != nil {
		// Patroni first, so it cannot start a postmaster the next step
		// would miss.
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	signalPostgres(m.dataDir(), syscall.SIGKILL)
	return nil
}

// Pause freezes member name (SIGSTOP of Patroni and all of PostgreSQL), as
// a hung machine: its TCP connections stay open and statements in flight
// hang. Resume wakes it.
func (c *Cluster) Pause(name string) error {
	return c.signal(name, syscall.SIGSTOP, "paused")
}

// Resume wakes a paused member (SIGCONT). A primary paused past its ttl
// wakes without its leader key; Patroni demotes it.
func (c *Cluster) Resume(name string) error {
	return c.signal(name, syscall.SIGCONT, "resumed")
}

func (c *Cluster) signal(name string, sig syscall.Signal, what string) error {
	m, err := c.member(name)
	if err != nil {
		return err
	}
	c.mu.Lock()
	p := m.proc
	c.mu.Unlock()
	if p == nil {
		return fmt.Errorf("patronilocal: %s/%s is not running", c.cfg.Scope, name)
	}
	c.cfg.logger().Info("patroni member "+what, "scope", c.cfg.Scope, "member", name)
	if sig == syscall.SIGSTOP {
		syscall.Kill(-p.cmd.Process.Pid, sig)
		signalPostgres(m.dataDir(), sig)
		return nil
	}
	signalPostgres(m.dataDir(), sig)
	syscall.Kill(-p.cmd.Process.Pid, sig)
	return nil
}

// Restart starts a killed member again on its data and ports and waits
// until it streams from the current primary; an old primary rejoins
// through pg_rewind.
func (c *Cluster) Restart(ctx context.Context, name string) error {
	m, err := c.member(name)
	if err != nil {
		return err
	}
	c.mu.Lock()
	running := m.proc != nil
	c.mu.Unlock()
	if running {
		return fmt.Errorf("patronilocal: %s/%s is running; Kill it first", c.cfg.Scope, name)
	}
	c.cfg.logger().Info("patroni member restarted", "scope", c.cfg.Scope, "member", name)
	if err := c.spawn(m); err != nil {
		return err
	}
	return c.waitFor(ctx, func(ms []MemberStatus) bool {
		for _, s := range ms {
			if s.Name == name && s.Role != RoleLeader && s.State == StateStreaming {
				return true
			}
		}
		return false
	})
}

// signalPostgres sends sig to the postmaster of dataDir and to each of its
// children. Each backend calls setsid, so a process-group signal would
// miss them; a hung or lost machine stops all of them at once.
func signalPostgres(dataDir string, sig syscall.Signal) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil || pid <= 0 {
		return
	}
	if !isPostgres(pid, dataDir) {
		return // stale file: the pid now names another process
	}
	syscall.Kill(pid, sig)
	for _, child := range children(pid) {
		syscall.Kill(child, sig)
	}
	if sig == syscall.SIGKILL {
		// Wait (briefly) until the postmaster is gone so a restart does
		// not find it holding the port.
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if syscall.Kill(pid, 0) == syscall.ESRCH || isZombie(pid) {
				return
			}
		}
	}
}

// isPostgres reports whether pid is a postgres process serving dataDir.
func isPostgres(pid int, dataDir string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	return strings.Contains(string(cmdline), dataDir)
}

func isZombie(pid int) bool {
	_, state, ok := statOf(pid)
	return ok && state == "Z"
}

// children lists the processes whose parent is pid.
func children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _, ok := statOf(p); ok && ppid == pid {
			out = append(out, p)
		}
	}
	return out
}

// statOf reads a process's parent pid and state from /proc/PID/stat.
func statOf(pid int) (ppid int, state string, ok bool) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", false
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return 0, "", false
	}
	fields := strings.Fields(line[i+1:])
	if len(fields) < 2 {
		return 0, "", false
	}
	ppid, err = strconv.Atoi(fields[1])
	return ppid, fields[0], err == nil
}

// Sweep kills members of clusters whose starting process died without
// stopping them (a test binary killed by its timeout) and removes their
// directories: each would otherwise hold memory, ports and DCS keys.
func Sweep() {
	dirs, _ := filepath.Glob(filepath.Join("/tmp", dirPrefix+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		owner, err := strconv.Atoi(string(b))
		if err != nil || owner <= 0 || !errors.Is(syscall.Kill(owner, 0), syscall.ESRCH) {
			continue
		}
		members, _ := filepath.Glob(filepath.Join(dir, "*", pidFile))
		for _, pf := range members {
			if b, err := os.ReadFile(pf); err == nil {
				if pid, err := strconv.Atoi(string(b)); err == nil && pid > 0 {
					syscall.Kill(-pid, syscall.SIGKILL)
				}
			}
			signalPostgres(filepath.Join(filepath.Dir(pf), "data"), syscall.SIGKILL)
		}
		os.RemoveAll(dir)
	}
}
