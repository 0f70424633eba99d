package cluster

import (
	"context"
	"errors"
	"os/exec"
	"syscall"
	"testing"
)

// waitState blocks until the child reports the state flags ask for
// (WUNTRACED: stopped; WCONTINUED: continued), without reaping it.
func waitState(t *testing.T, pid, flags int) syscall.WaitStatus {
	t.Helper()
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, flags, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("wait4: %v", err)
		}
		return ws
	}
}

func TestProcsPauseResumeKillAndRestartOneRegion(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	ctx := context.Background()
	p := NewProcs()
	defer p.Stop(ctx)
	for _, r := range []string{"us-east", "eu-west"} {
		if err := p.Start(ctx, r, ProcSpec{Path: sleep, Args: []string{"600"}}); err != nil {
			t.Fatal(err)
		}
	}
	pid, _ := p.PID("us-east")
	other, _ := p.PID("eu-west")

	if err := p.Pause(ctx, "us-east"); err != nil {
		t.Fatal(err)
	}
	if ws := waitState(t, pid, syscall.WUNTRACED); !ws.Stopped() {
		t.Fatalf("after Pause: %v, want stopped", ws)
	}
	if err := p.Resume(ctx, "us-east"); err != nil {
		t.Fatal(err)
	}
	if ws := waitState(t, pid, syscall.WCONTINUED); !ws.Continued() {
		t.Fatalf("after Resume: %v, want continued", ws)
	}

	if err := p.Kill(ctx, "us-east"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.PID("us-east"); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("after Kill: %v, want ErrNotRunning", err)
	}
	if err := p.Pause(ctx, "us-east"); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Pause of a killed region: %v, want ErrNotRunning", err)
	}
	if got, err := p.PID("eu-west"); err != nil || got != other {
		t.Fatalf("the other region was touched: pid %d (%v), want %d", got, err, other)
	}

	if err := p.Restart(ctx, "us-east"); err != nil {
		t.Fatal(err)
	}
	if again, err := p.PID("us-east"); err != nil || again == pid {
		t.Fatalf("after Restart: pid %d (%v), want a new process", again, err)
	}
}
