package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
)

// ErrNotRunning is returned for a region whose process is not running.
var ErrNotRunning = errors.New("cluster: region process not running")

// ProcSpec says how to start one region's process.
type ProcSpec struct {
	// Path and Args are the command; Env and Dir its environment and
	// working directory (nil and "" inherit the drill's).
	Path string
	Args []string
	Env  []string
	Dir  string
	// Stdout and Stderr receive its output; nil discards it.
	Stdout, Stderr io.Writer
	// Ready, if set, returns once the process serves (polls its readyz);
	// Start and Restart wait for it.
	Ready func(ctx context.Context) error
}

// Procs runs one process per region and implements Processes: SIGKILL,
// SIGSTOP and SIGCONT hit that region's process only, and Restart starts
// it again from its spec (same flags, so the same listen address).
type Procs struct {
	mu    sync.Mutex
	specs map[string]ProcSpec
	procs map[string]*proc
}

type proc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process exited and was reaped
}

var _ Processes = (*Procs)(nil)

// NewProcs returns a supervisor with no processes.
func NewProcs() *Procs { return &Procs{specs: map[string]ProcSpec{}, procs: map[string]*proc{}} }

// Start starts region's process from spec and waits for spec.Ready.
func (p *Procs) Start(ctx context.Context, region string, spec ProcSpec) error {
	p.mu.Lock()
	p.specs[region] = spec
	p.mu.Unlock()
	return p.Restart(ctx, region)
}

// Restart implements Processes: it starts region's process again (a
// running one is killed first) and waits for it to be ready.
func (p *Procs) Restart(ctx context.Context, region string) error {
	p.mu.Lock()
	spec, ok := p.specs[region]
	p.mu.Unlock()
	if !ok {
		return fmt.Errorf("cluster: no process spec for %s", region)
	}
	if err := p.Kill(ctx, region); err != nil && !errors.Is(err, ErrNotRunning) {
		return err
	}
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = spec.Env, spec.Dir, spec.Stdout, spec.Stderr
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cluster: start %s: %w", region, err)
	}
	pr := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(pr.done) }() // reaps it; Kill and Stop wait on done
	p.mu.Lock()
	p.procs[region] = pr
	p.mu.Unlock()
	if spec.Ready != nil {
		if err := spec.Ready(ctx); err != nil {
			return fmt.Errorf("cluster: %s not ready: %w", region, err)
		}
	}
	return nil
}

func (p *Procs) running(region string) (*proc, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pr, ok := p.procs[region]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotRunning, region)
	}
	select {
	case <-pr.done:
		return nil, fmt.Errorf("%w: %s exited", ErrNotRunning, region)
	default:
		return pr, nil
	}
}

// signal sends sig to region's running process.
func (p *Procs) signal(region string, sig syscall.Signal) (*proc, error) {
	pr, err := p.running(region)
	if err != nil {
		return nil, err
	}
	if err := pr.cmd.Process.Signal(sig); err != nil {
		return nil, fmt.Errorf("cluster: %v to %s: %w", sig, region, err)
	}
	return pr, nil
}

// Kill implements Processes: SIGKILL, then wait until it is reaped.
func (p *Procs) Kill(ctx context.Context, region string) error {
	pr, err := p.signal(region, syscall.SIGKILL)
	if err != nil {
		return err
	}
	select {
	case <-pr.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Pause implements Processes: SIGSTOP.
func (p *Procs) Pause(_ context.Context, region string) error {
	_, err := p.signal(region, syscall.SIGSTOP)
	return err
}

// Resume implements Processes: SIGCONT.
func (p *Procs) Resume(_ context.Context, region string) error {
	_, err := p.signal(region, syscall.SIGCONT)
	return err
}

// PID returns region's running process id.
func (p *Procs) PID(region string) (int, error) {
	pr, err := p.running(region)
	if err != nil {
		return 0, err
	}
	return pr.cmd.Process.Pid, nil
}

// Stop kills every process (resuming paused ones is not needed: SIGKILL
// ends a stopped process too) and waits for them.
func (p *Procs) Stop(ctx context.Context) error {
	p.mu.Lock()
	regions := make([]string, 0, len(p.procs))
	for r := range p.procs {
		regions = append(regions, r)
	}
	p.mu.Unlock()
	var errs []error
	for _, r := range regions {
		if err := p.Kill(ctx, r); err != nil && !errors.Is(err, ErrNotRunning) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
