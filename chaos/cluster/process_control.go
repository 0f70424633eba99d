package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// ErrControl is returned (wrapped) when a region's drill control API
// refuses a request or cannot be reached: the idemd was not built with
// -tags drill, or it is not running.
var ErrControl = errors.New("cluster: drill control API")

// Arm implements CrashPoints: region's idemd kills itself (SIGKILL) when
// a request reaches point, through its drill control API.
func (p *Process) Arm(ctx context.Context, region, point string) error {
	return p.control(ctx, region, http.MethodPut, "/crash/"+url.PathEscape(point), nil)
}

// Disarm implements CrashPoints. A region whose crash point fired is dead
// (a restarted process starts disarmed): it is started again and fails
// back, as after Restart. A region still running is disarmed.
func (p *Process) Disarm(ctx context.Context, region, point string) error {
	ctx, cancel := healing(ctx)
	defer cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.procs.PID(region); err != nil {
		if err := p.procs.Restart(ctx, region); err != nil {
			return err
		}
		return p.failback(ctx, region)
	}
	return p.control(ctx, region, http.MethodDelete, "/crash/"+url.PathEscape(point), nil)
}

// Skew implements Clocks: region's injected clock (leases, heartbeats,
// liveness, failover timings) is shifted by d; 0 undoes it.
func (p *Process) Skew(ctx context.Context, region string, d time.Duration) error {
	body, _ := json.Marshal(map[string]string{"offset": d.String()})
	return p.control(ctx, region, http.MethodPut, "/clock/skew", body)
}

// control sends one request to region's control API and wants a 2xx.
func (p *Process) control(ctx context.Context, region, method, path string, body []byte) error {
	r, err := p.region(region)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+r.control+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %s %s of %s: %w", ErrControl, method, path, region, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%w: %s %s of %s: %s: %s", ErrControl, method, path, region, resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}
