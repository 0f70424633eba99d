package main

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/internal/freeport"
	"github.com/idemcoord/idemcoord/internal/testutil"
)

// devProc is a running `idemd dev`.
type devProc struct {
	cmd      *exec.Cmd
	out, err *testutil.LogBuffer
	exited   chan error
}

// startDev runs `idemd dev --port-base base` with TMPDIR tmp and waits
// until it printed everything.
func startDev(t *testing.T, bin, tmp string, base int) *devProc {
	t.Helper()
	p := &devProc{out: &testutil.LogBuffer{}, err: &testutil.LogBuffer{}, exited: make(chan error, 1)}
	p.cmd = exec.Command(bin, "dev", "--port-base", fmt.Sprint(base))
	p.cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.err
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			p.cmd.Process.Kill()
		}
	})
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(p.out.String(), "Ctrl-C stops everything.") {
		select {
		case err := <-p.exited:
			t.Fatalf("idemd dev exited: %v\n%s%s", err, p.out.String(), p.err.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("idemd dev not up after 90s:\n%s%s", p.out.String(), p.err.String())
		}
	}
	return p
}

// dirs returns the data and PostgreSQL directories the cluster printed.
func (p *devProc) dirs(t *testing.T) (data, pg string) {
	t.Helper()
	out := p.out.String()
	d := regexp.MustCompile(`Data directory:\s+(\S+)`).FindStringSubmatch(out)
	g := regexp.MustCompile(`PostgreSQL data:\s+(\S+)`).FindStringSubmatch(out)
	if d == nil || g == nil {
		t.Fatalf("idemd dev did not print its directories:\n%s", out)
	}
	return d[1], g[1]
}

// wait waits for the process to exit after a signal.
func (p *devProc) wait(t *testing.T) {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(60 * time.Second):
		t.Fatal("idemd dev did not exit within 60s of the signal")
	}
}

// freePortBase returns a port base whose dev cluster ports are free and
// below the kernel's ephemeral range: a base inside it lost a port to the
// outgoing connection of a test running beside it between the check and
// the cluster's listen (CI, stop 38: "bind: address already in use").
func freePortBase(t *testing.T) int {
	t.Helper()
	const lowest = freeport.Lowest
	span := slices.Max(slices.Collect(maps.Keys(devcluster.Ports(0)))) + 1 // the cluster's ports: base to base+span-1
	top := max(freeport.EphemeralLow()-span, lowest+1)
	for range 50 {
		base := lowest + rand.IntN(top-lowest)
		if devcluster.CheckPorts(base) == nil {
			return base
		}
	}
	t.Fatal("no free port base")
	return 0
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestDevCleansUpOnHangupAndAfterACrash: `idemd dev` (the real binary)
// prints idemctl commands that name its --port-base and its control
// endpoint; closing its terminal (SIGHUP) stops it and removes its
// PostgreSQL and data directories; a cluster killed outright leaves them,
// and the next `idemd dev` removes them, saying so.
func TestDevCleansUpOnHangupAndAfterACrash(t *testing.T) {
	bin := buildIdemd(t)
	tmp := t.TempDir()
	base := freePortBase(t)

	p := startDev(t, bin, tmp, base)
	out := p.out.String()
	// The table's column width depends on its rows (the global entry's
	// appears when haproxy is installed), so any run of spaces will do.
	for _, want := range []string{regexp.QuoteMeta(fmt.Sprintf("idemctl --port-base %d regions", base)),
		fmt.Sprintf(`dev control +http://127\.0\.0\.1:%d`, base+102)} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("idemd dev output lacks %q:\n%s", want, out)
		}
	}
	data, pg := p.dirs(t)
	p.cmd.Process.Signal(syscall.SIGHUP)
	p.wait(t)
	if exists(data) || exists(pg) {
		t.Errorf("after SIGHUP: data directory left %v, PostgreSQL directory left %v", exists(data), exists(pg))
	}

	p = startDev(t, bin, tmp, base)
	data, pg = p.dirs(t)
	p.cmd.Process.Kill()
	p.wait(t)
	if !exists(data) || !exists(pg) {
		t.Fatalf("a killed cluster left nothing behind? data %v, PostgreSQL %v", exists(data), exists(pg))
	}
	next := startDev(t, bin, tmp, base)
	if want := fmt.Sprintf("removed what a dev cluster that died (pid %d) left behind", p.cmd.Process.Pid); !strings.Contains(next.err.String(), want) {
		t.Errorf("the next idemd dev did not say %q:\n%s", want, next.err.String())
	}
	if exists(data) || exists(pg) {
		t.Errorf("after the next start: data directory left %v, PostgreSQL directory left %v", exists(data), exists(pg))
	}
	next.cmd.Process.Signal(syscall.SIGINT)
	next.wait(t)
}
