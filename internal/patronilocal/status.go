package patronilocal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// Member roles and states as Patroni's REST API reports them.
const (
	RoleLeader      = "leader"
	RoleSyncStandby = "sync_standby"
	RoleReplica     = "replica"
	StateRunning    = "running"
	StateStreaming  = "streaming"
)

// MemberStatus is one member as Patroni's REST /cluster reports it.
type MemberStatus struct {
	// Name is the member's Patroni name.
	Name string `json:"name"`
	// Region is the member's region tag.
	Region string `json:"region"`
	// Role is RoleLeader, RoleSyncStandby or RoleReplica.
	Role string `json:"role"`
	// State is e.g. StateRunning (a primary), StateStreaming (a standby
	// receiving WAL), "stopped", "starting".
	State string `json:"state"`
	// Lag is how far the member's WAL is behind the primary, in bytes;
	// -1 when Patroni reports it unknown. Always 0 for the primary.
	Lag int64 `json:"lag_bytes"`
	// Timeline is the member's PostgreSQL timeline; each promotion starts
	// a new one.
	Timeline int `json:"timeline"`
	// REST is the member's Patroni REST base URL.
	REST string `json:"rest"`
	// Addr is the member's PostgreSQL host:port.
	Addr string `json:"addr"`
}

// restTimeout bounds one REST call: a paused member holds its connections
// open, so a caller moves on to the next member.
const restTimeout = 2 * time.Second

// ErrNoAnswer is returned when no member's REST API answered.
var ErrNoAnswer = errors.New("patronilocal: no Patroni REST API answered")

// ReadStatus asks the members' REST APIs (base URLs, tried in order until
// one answers) for the cluster's members, as GET /cluster reports them.
func ReadStatus(ctx context.Context, restURLs []string) ([]MemberStatus, error) {
	var errs []error
	for _, base := range restURLs {
		ms, err := readCluster(ctx, base)
		if err == nil {
			return ms, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("%w: %w", ErrNoAnswer, errors.Join(errs...))
}

func readCluster(ctx context.Context, base string) ([]MemberStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, restTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/cluster", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s/cluster: %s", base, resp.Status)
	}
	var body struct {
		Members []struct {
			Name     string            `json:"name"`
			Role     string            `json:"role"`
			State    string            `json:"state"`
			APIURL   string            `json:"api_url"`
			Host     string            `json:"host"`
			Port     int               `json:"port"`
			Timeline int               `json:"timeline"`
			Lag      json.RawMessage   `json:"lag"`
			Tags     map[string]string `json:"tags"`
		} `json:"members"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("%s/cluster: %w", base, err)
	}
	out := make([]MemberStatus, 0, len(body.Members))
	for _, m := range body.Members {
		s := MemberStatus{Name: m.Name, Region: m.Tags["region"], Role: m.Role, State: m.State,
			Timeline: m.Timeline, Addr: net.JoinHostPort(m.Host, strconv.Itoa(m.Port)), Lag: -1}
		if m.Role == RoleLeader {
			s.Lag = 0
		} else if n, err := strconv.ParseInt(string(m.Lag), 10, 64); err == nil {
			s.Lag = n
		}
		if u := m.APIURL; len(u) > len("/patroni") && u[len(u)-len("/patroni"):] == "/patroni" {
			s.REST = u[:len(u)-len("/patroni")]
		} else {
			s.REST = u
		}
		out = append(out, s)
	}
	return out, nil
}

// Status returns the members as Patroni reports them, asking each running
// member's REST API in turn.
func (c *Cluster) Status(ctx context.Context) ([]MemberStatus, error) {
	return ReadStatus(ctx, c.liveRESTURLs())
}

// liveRESTURLs lists the REST URLs of members with a process, so a
// killed member costs no connection attempt.
func (c *Cluster) liveRESTURLs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var urls []string
	for _, m := range c.members {
		if m.proc != nil {
			urls = append(urls, m.restURL())
		}
	}
	return urls
}

// Primary returns the member holding the leader key.
func (c *Cluster) Primary(ctx context.Context) (MemberStatus, error) {
	ms, err := c.Status(ctx)
	if err != nil {
		return MemberStatus{}, err
	}
	for _, m := range ms {
		if m.Role == RoleLeader {
			return m, nil
		}
	}
	return MemberStatus{}, fmt.Errorf("patronilocal: %s has no leader", c.cfg.Scope)
}

// WaitHealthy waits until the cluster has a running primary and (unless
// Async) a streaming synchronous standby: the state in which a strict
// cluster commits.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	return c.waitFor(ctx, func(ms []MemberStatus) bool { return healthy(ms, c.cfg.Async) })
}

func healthy(ms []MemberStatus, async bool) bool {
	var leader, sync bool
	for _, m := range ms {
		switch {
		case m.Role == RoleLeader && m.State == StateRunning:
			leader = true
		case m.Role == RoleSyncStandby && m.State == StateStreaming:
			sync = true
		case async && m.State == StateStreaming:
			sync = true
		}
	}
	return leader && sync
}

// WaitNewPrimary waits until a member other than old holds the leader key
// and runs as primary, and returns it.
func (c *Cluster) WaitNewPrimary(ctx context.Context, old string) (MemberStatus, error) {
	var got MemberStatus
	err := c.waitFor(ctx, func(ms []MemberStatus) bool {
		for _, m := range ms {
			if m.Role == RoleLeader && m.State == StateRunning && m.Name != old {
				got = m
				return true
			}
		}
		return false
	})
	return got, err
}

// waitFor polls Status until ok holds or ctx ends.
func (c *Cluster) waitFor(ctx context.Context, ok func([]MemberStatus) bool) error {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	var last error
	for {
		ms, err := c.Status(ctx)
		if err == nil && ok(ms) {
			return nil
		}
		if err != nil {
			last = err
		} else {
			last = fmt.Errorf("last status: %+v", ms)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (%v)", ctx.Err(), last)
		case <-t.C:
		}
	}
}

// Switchover hands the leader key from the current primary to candidate
// (empty: Patroni picks the synchronous standby) through the primary's
// REST POST /switchover, as `patronictl switchover` does, and waits
// until the new primary runs with a streaming synchronous standby.
func (c *Cluster) Switchover(ctx context.Context, candidate string) error {
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	body, _ := json.Marshal(map[string]string{"leader": p.Name, "candidate": candidate})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.REST+"/switchover", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("patronilocal: switchover: %w", err)
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("patronilocal: switchover of %s from %s: %s: %s", c.cfg.Scope, p.Name, resp.Status, msg)
	}
	c.cfg.logger().Info("patroni switchover", "scope", c.cfg.Scope, "from", p.Name, "to", candidate)
	if _, err := c.WaitNewPrimary(ctx, p.Name); err != nil {
		return err
	}
	return c.WaitHealthy(ctx)
}

// ProbePrimary asks member restURL's GET /primary, which Patroni answers
// 200 only on a running primary holding the leader key (the HAProxy check).
// It returns nil on 200. The DCS keeps a dead primary's leader key for up
// to its ttl, so /cluster alone would still name it leader.
func ProbePrimary(ctx context.Context, restURL string) error {
	ctx, cancel := context.WithTimeout(ctx, restTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, restURL+"/primary", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s/primary: %s", restURL, resp.Status)
	}
	return nil
}
