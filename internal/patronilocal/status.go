package patronilocal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/idemcoord/idemcoord/internal/patronirest"
)

// Member roles and states as Patroni's REST API reports them (package
// patronirest's, repeated here for the callers of this package).
const (
	RoleLeader        = patronirest.RoleLeader
	RoleSyncStandby   = patronirest.RoleSyncStandby
	RoleQuorumStandby = patronirest.RoleQuorumStandby
	RoleReplica       = patronirest.RoleReplica
	StateRunning      = patronirest.StateRunning
	StateStreaming    = patronirest.StateStreaming
)

// MemberStatus is one member as Patroni's REST /cluster reports it.
type MemberStatus = patronirest.MemberStatus

// ErrNoAnswer is returned when no member's REST API answered.
var ErrNoAnswer = patronirest.ErrNoAnswer

// ReadStatus asks the members' REST APIs (base URLs, tried in order until
// one answers) for the cluster's members, as GET /cluster reports them.
func ReadStatus(ctx context.Context, restURLs []string) ([]MemberStatus, error) {
	return patronirest.ReadStatus(ctx, restURLs)
}

// ProbePrimary asks member restURL's GET /primary (200 only on a running
// primary holding the leader key); nil on 200.
func ProbePrimary(ctx context.Context, restURL string) error {
	return patronirest.ProbePrimary(ctx, restURL)
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
// Async) a streaming synchronous or quorum standby: the state in which a
// strict cluster commits.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	return c.waitFor(ctx, func(ms []MemberStatus) bool { return healthy(ms, c.cfg.Async) })
}

func healthy(ms []MemberStatus, async bool) bool {
	var leader, sync bool
	for _, m := range ms {
		switch {
		case m.Role == RoleLeader && m.State == StateRunning:
			leader = true
		case patronirest.Synchronous(m.Role) && m.State == StateStreaming:
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
// (empty: Patroni picks the synchronous standby; in quorum commit any
// member may be the candidate) through the primary's
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

// SetSyncStandbys sets the cluster's synchronous_node_count (how many
// standbys each commit waits for) in the DCS, through a member's REST
// PATCH /config as `patronictl edit-config -s synchronous_node_count=N`
// does, and waits until the primary has n streaming synchronous standbys
// (and the other members stream).
func (c *Cluster) SetSyncStandbys(ctx context.Context, n int) error {
	if n < 1 || n >= len(c.members) {
		return fmt.Errorf("patronilocal: %s: %d synchronous standbys: want 1 to %d", c.cfg.Scope, n, len(c.members)-1)
	}
	body, _ := json.Marshal(map[string]int{"synchronous_node_count": n})
	var last error
	for _, base := range c.liveRESTURLs() {
		req, err := http.NewRequestWithContext(ctx, http.MethodPatch, base+"/config", bytes.NewReader(body))
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			last = err
			continue
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			last = fmt.Errorf("patronilocal: PATCH %s/config: %s: %s", base, resp.Status, msg)
			continue
		}
		return c.WaitSynced(ctx, n)
	}
	return fmt.Errorf("patronilocal: %s: set synchronous_node_count %d: %w", c.cfg.Scope, n, last)
}

// WaitSynced waits until the cluster is settled with n synchronous
// standbys: a running primary, exactly n streaming members in the
// sync_standby role, and every other member streaming. In quorum commit
// every streaming standby is a quorum standby (commits wait for ANY n of
// them), so it waits for all of them to be.
func (c *Cluster) WaitSynced(ctx context.Context, n int) error {
	want := len(c.members)
	if c.cfg.Quorum {
		n = want - 1
	}
	return c.waitFor(ctx, func(ms []MemberStatus) bool {
		var leader, sync, streaming int
		for _, m := range ms {
			switch {
			case m.Role == RoleLeader && m.State == StateRunning:
				leader++
			case m.State == StateStreaming:
				streaming++
				if patronirest.Synchronous(m.Role) {
					sync++
				}
			}
		}
		return leader == 1 && sync == n && leader+streaming == want
	})
}
