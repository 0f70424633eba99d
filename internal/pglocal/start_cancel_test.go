package pglocal

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// review2PostmasterPID returns the pid in postmaster.pid of the server
// directory this process owns, or 0 while there is none.
func review2PostmasterPID() (dir string, pid int) {
	dirs, _ := filepath.Glob(filepath.Join("/tmp", dirPrefix+"*"))
	me := strconv.Itoa(os.Getpid())
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil || string(b) != me {
			continue
		}
		f, err := os.Open(filepath.Join(d, "data", "postmaster.pid"))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		if sc.Scan() {
			pid, _ = strconv.Atoi(strings.TrimSpace(sc.Text()))
		}
		f.Close()
		if pid > 0 {
			return d, pid
		}
	}
	return "", 0
}

// Start cancelled (Ctrl-C on `idemd dev`) after pg_ctl has launched the
// postmaster but before pg_ctl -w returned must not leave that postmaster
// running: Start kills pg_ctl, deletes the directory (so sweep can never
// find it) and returns, and the server runs on, orphaned, holding its port
// and memory.
func TestCancelledStartLeavesNoServer(t *testing.T) {
	if _, err := BinDir(); err != nil {
		t.Fatal(err)
	}
	for try := 0; try < 5; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		type result struct {
			s   *Server
			err error
		}
		done := make(chan result, 1)
		go func() {
			s, err := Start(ctx)
			done <- result{s, err}
		}()
		var pid int
		var dir string
		var r result
		var finished bool
	poll:
		for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); {
			select {
			case r = <-done:
				finished = true
				break poll
			default:
			}
			if d, p := review2PostmasterPID(); p > 0 {
				pid, dir = p, d
				cancel() // the signal arrives now
				break
			}
			time.Sleep(time.Millisecond)
		}
		if !finished {
			r = <-done
		}
		cancel()
		if r.err == nil {
			// pg_ctl returned before the cancel: no window this time.
			r.s.Close()
			continue
		}
		if pid == 0 {
			t.Fatalf("Start failed before the postmaster started: %v", r.err)
		}
		// A zombie is dead: here PID 1 does not reap orphans, so a stopped
		// postmaster can linger as <defunct>.
		alive := syscall.Kill(pid, 0) == nil && !zombie(pid)
		if alive {
			// Stop the orphan this test started (immediate shutdown, by pid).
			syscall.Kill(pid, syscall.SIGQUIT)
			_, statErr := os.Stat(dir)
			t.Fatalf("Start returned %v, but its postmaster (pid %d) still runs; its directory %s exists: %v (sweep needs it)",
				r.err, pid, dir, statErr == nil)
		}
		return
	}
	t.Skip("pg_ctl always returned before the cancel; no window hit")
}

// zombie reports whether pid has exited and waits to be reaped.
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] == 'Z'
}
