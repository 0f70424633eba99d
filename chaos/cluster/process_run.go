package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/idemcoord/idemcoord/clock"
)

// Environment read by a drill-built idemd (see the drill build's
// contract): its control API's address, and the unsafe mode to start in.
const (
	EnvDrillControl = "IDEMCOORD_DRILL_CONTROL"
	EnvDrillUnsafe  = "IDEMCOORD_DRILL_UNSAFE"
)

const (
	// procReadyTimeout bounds one idemd's start: its store, etcd (through
	// its proxies), the directory bootstrap, its listener.
	procReadyTimeout = time.Minute
	// procSettleTimeout bounds waiting, at start, for every region to see
	// every region healthy.
	procSettleTimeout = time.Minute
	// procPoll is how often a start is polled.
	procPoll = 50 * time.Millisecond
)

// errNotSettled is returned when the regions do not all see each other
// healthy within procSettleTimeout.
var errNotSettled = errors.New("cluster: regions do not see every region healthy")

// spec is how region r's idemd is started (and restarted, on the same
// addresses): `idemd run` with its own configuration and control address,
// its output appended to <dir>/<region>.log.
func (p *Process) spec(r *procRegion) ProcSpec {
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, EnvDrillControl+"=") && !strings.HasPrefix(kv, EnvDrillUnsafe+"=") {
			env = append(env, kv)
		}
	}
	env = append(env, EnvDrillControl+"="+r.control)
	if p.opts.Unsafe != "" && p.opts.Unsafe != UnsafeAsyncReplication {
		env = append(env, EnvDrillUnsafe+"="+p.opts.Unsafe)
	}
	return ProcSpec{Path: p.bin, Args: []string{"run", "--config", r.config, "--log-format", "json"}, Env: env,
		Stdout: r.log, Stderr: r.log, Ready: func(ctx context.Context) error { return p.ready(ctx, r) }}
}

// ready waits until r's gateway answers /readyz 200 and its drill control
// API /healthz 200, failing at once if its process exited (with the tail
// of its log).
func (p *Process) ready(ctx context.Context, r *procRegion) error {
	ctx, cancel := context.WithTimeout(ctx, procReadyTimeout)
	defer cancel()
	for {
		if _, err := p.procs.PID(r.name); err != nil {
			return fmt.Errorf("%w\n%s", err, p.logTail(r.name, 20))
		}
		if p.get(ctx, "http://"+r.listen+"/readyz") == nil && p.get(ctx, "http://"+r.control+"/healthz") == nil {
			return nil
		}
		if err := clock.Sleep(ctx, clock.Real(), procPoll); err != nil {
			return fmt.Errorf("%w\n%s", err, p.logTail(r.name, 20))
		}
	}
}

// get returns nil when url answers 200.
func (p *Process) get(ctx context.Context, url string) error {
	_, err := p.read(ctx, url)
	return err
}

// read GETs url and returns its body if it answered 200.
func (p *Process) read(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("cluster: GET %s: %s: %.200s", url, resp.Status, b)
	}
	return string(b), nil
}

// logTail returns the last n lines of region's log.
func (p *Process) logTail(region string, n int) string {
	b, err := os.ReadFile(filepath.Join(p.dir, region+".log"))
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// settle waits until every region's failover tracker sees every region
// healthy (its idemcoord_failover_region_state gauges all 0): regions
// start one after the other, and one that has not registered yet looks
// suspect to those started before it.
func (p *Process) settle(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, procSettleTimeout)
	defer cancel()
	for _, r := range p.regions {
		for {
			states, err := p.regionStates(ctx, r)
			healthy := err == nil && len(states) == len(p.regions)
			for _, s := range states {
				healthy = healthy && s == 0
			}
			if healthy {
				break
			}
			if err := clock.Sleep(ctx, clock.Real(), procPoll); err != nil {
				return fmt.Errorf("%w: %s sees %v (%v)", errNotSettled, r.name, states, err)
			}
		}
	}
	return nil
}

// regionStates scrapes r's /metrics for its view of each region's
// liveness state (0 healthy, 1 suspect, 2 failed, 3 recovering).
func (p *Process) regionStates(ctx context.Context, r *procRegion) (map[string]int, error) {
	body, err := p.read(ctx, "http://"+r.listen+"/metrics")
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "idemcoord_failover_region_state{") {
			continue
		}
		_, labels, _ := strings.Cut(line, `watched_region="`)
		name, _, ok := strings.Cut(labels, `"`)
		fields := strings.Fields(line)
		if !ok || len(fields) < 2 {
			continue
		}
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			continue
		}
		out[name] = int(v)
	}
	return out, nil
}
