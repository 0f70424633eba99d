// Package patronirest reads Patroni's REST API: a cluster's members as GET
// /cluster reports them, and the GET /primary check HAProxy uses. It has no
// dependency on running Patroni (internal/patronilocal does that), so the
// production idemctl links it for "idemctl store status".
package patronirest

import (
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
	// RoleQuorumStandby is a standby in the commit quorum of a cluster in
	// quorum commit (synchronous_mode: quorum): a commit waits for ANY
	// synchronous_node_count of them, and every one of them is a voter a
	// failover must hear from.
	RoleQuorumStandby = "quorum_standby"
	RoleReplica       = "replica"
	StateRunning      = "running"
	StateStreaming    = "streaming"
)

// Synchronous reports whether role is a standby that commits wait for:
// RoleSyncStandby (synchronous_mode: on) or RoleQuorumStandby
// (synchronous_mode: quorum).
func Synchronous(role string) bool {
	return role == RoleSyncStandby || role == RoleQuorumStandby
}

// MemberStatus is one member as Patroni's REST /cluster reports it.
type MemberStatus struct {
	// Name is the member's Patroni name.
	Name string `json:"name"`
	// Region is the member's region tag.
	Region string `json:"region"`
	// Role is RoleLeader, RoleSyncStandby, RoleQuorumStandby or
	// RoleReplica.
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
var ErrNoAnswer = errors.New("patronirest: no Patroni REST API answered")

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
