package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrNoLeader is returned by EtcdMembers.Leader when no reachable member
// says it leads.
var ErrNoLeader = errors.New("cluster: no etcd member leads")

// Members is a killable etcd cluster, one member per region, as
// internal/etcdlocal's Cluster is (Kill and Restart by index in Start's
// order) or as the process-level cluster's members are.
type Members interface {
	Endpoints() []string
	Kill(i int)
	Restart(ctx context.Context, i int) error
}

// EtcdMembers implements Etcd over Members whose i-th member is named
// names[i].
type EtcdMembers struct {
	m     Members
	names []string
}

var _ Etcd = (*EtcdMembers)(nil)

// NewEtcdMembers names the members of m, in its order.
func NewEtcdMembers(m Members, names []string) *EtcdMembers { return &EtcdMembers{m: m, names: names} }

// statusTimeout bounds the status call to one member: a killed member
// must not hold the leader lookup.
const statusTimeout = 2 * time.Second

// Leader implements Etcd: it asks each member's status and returns the
// member that says it is the leader.
func (e *EtcdMembers) Leader(ctx context.Context) (string, error) {
	for i, ep := range e.m.Endpoints() {
		name, ok, err := leads(ctx, ep)
		if err != nil {
			continue // a dead member says nothing
		}
		if ok {
			if name == "" && i < len(e.names) {
				name = e.names[i]
			}
			return name, nil
		}
	}
	return "", ErrNoLeader
}

// leads reports whether the member at ep is the leader, and its name.
func leads(ctx context.Context, ep string) (string, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: statusTimeout})
	if err != nil {
		return "", false, err
	}
	defer c.Close()
	st, err := c.Status(ctx, ep)
	if err != nil {
		return "", false, err
	}
	if st.Leader != st.Header.MemberId {
		return "", false, nil
	}
	members, err := c.MemberList(ctx)
	if err != nil {
		return "", true, nil
	}
	for _, m := range members.Members {
		if m.ID == st.Header.MemberId {
			return m.Name, true, nil
		}
	}
	return "", true, nil
}

func (e *EtcdMembers) index(member string) (int, error) {
	i := slices.Index(e.names, member)
	if i < 0 {
		return 0, fmt.Errorf("cluster: no etcd member %q", member)
	}
	return i, nil
}

// KillMember implements Etcd.
func (e *EtcdMembers) KillMember(_ context.Context, member string) error {
	i, err := e.index(member)
	if err != nil {
		return err
	}
	e.m.Kill(i)
	return nil
}

// RestartMember implements Etcd.
func (e *EtcdMembers) RestartMember(ctx context.Context, member string) error {
	i, err := e.index(member)
	if err != nil {
		return err
	}
	return e.m.Restart(ctx, i)
}
