package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/internal/testutil"
)

// binTimeout bounds one run of the idemctl binary.
const binTimeout = 60 * time.Second

// ctlBin is the idemctl binary built once for the tests that run it as an
// operator would: its own process, its own stdout and stderr, its exit
// code.
var ctlBin struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// tempRoot is the temporary directory at start, before any test moves
// TMPDIR (to hide or plant dev cluster state): the binary outlives those.
var tempRoot = os.TempDir()

// idemctlBinary builds idemctl (once per test binary) and returns its path.
func idemctlBinary(t *testing.T) string {
	t.Helper()
	ctlBin.once.Do(func() {
		dir, err := os.MkdirTemp(tempRoot, "idemctl-bin")
		if err != nil {
			ctlBin.err = err
			return
		}
		ctlBin.dir, ctlBin.path = dir, filepath.Join(dir, "idemctl")
		out, err := exec.Command("go", "build", "-o", ctlBin.path, ".").CombinedOutput()
		if err != nil {
			ctlBin.err = errors.New(string(out))
		}
	})
	if ctlBin.err != nil {
		t.Fatalf("building idemctl: %v", ctlBin.err)
	}
	return ctlBin.path
}

// result is one run of the binary.
type result struct {
	stdout, stderr string
	code           int
}

// runCtl runs the idemctl binary with args and env (added to a copy of
// the test's environment) and returns what it printed and its exit code.
func runCtl(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), binTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, idemctlBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("idemctl %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return r
}

// devCluster starts a dev cluster of the test's own on free ports, with
// a recovering region's hold time of an hour (so "recovering" lasts the
// whole test), and no state file: idemctl finds it only through the
// configuration files it is given.
func devCluster(t *testing.T) *devcluster.Cluster {
	t.Helper()
	return devClusterWith(t, devcluster.Options{})
}

// devClusterWith is devCluster with opts (its logger and hold time are
// set here).
func devClusterWith(t *testing.T, opts devcluster.Options) *devcluster.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts.Logger = slog.New(slog.DiscardHandler)
	if opts.FailoverTimings.HoldTime == 0 {
		opts.FailoverTimings.HoldTime = time.Hour
	}
	c, err := devcluster.Start(ctx, opts)
	if err != nil {
		t.Fatalf("starting a dev cluster: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c.Close(ctx)
	})
	return c
}

// waitFor runs check until it returns "" (nothing left to wait for), and
// fails the test with its last answer after limit. It waits on events a
// real cluster reports (a controller's decision), never on a clock of the
// test's own.
func waitFor(t *testing.T, limit time.Duration, check func() string) {
	t.Helper()
	testutil.Eventually(t, limit, func() error {
		if why := check(); why != "" {
			return errors.New(why)
		}
		return nil
	})
}
