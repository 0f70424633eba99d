// Package etcdlocal runs a real etcd cluster inside the process, for the
// local dev cluster and for tests: one member per name, on loopback ports.
package etcdlocal

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/idemcoord/idemcoord/internal/freeport"
)

// Cluster is a running embedded etcd cluster.
type Cluster struct {
	dir     string
	mu      sync.Mutex
	members []*embed.Etcd   // by name index; nil while killed
	cfgs    []*embed.Config // to restart a killed member
	clients []string
}

// Options tune the cluster.
type Options struct {
	// Fast selects test timers (10 ms ticks, 100 ms elections): leader
	// failover in ~150 ms instead of ~1 s.
	Fast bool
}

// startAttempts bounds how often Start picks new ports: a free port can
// be taken by another process between the pick and the member's listen.
const startAttempts = 3

// Start starts one member per name and waits until all are ready.
func Start(ctx context.Context, names []string, opts Options) (*Cluster, error) {
	for attempt := 1; ; attempt++ {
		c, err := start(ctx, names, opts)
		if err == nil || attempt == startAttempts || !errors.Is(err, syscall.EADDRINUSE) || ctx.Err() != nil {
			return c, err
		}
	}
}

// start is one attempt of Start, on newly picked ports.
func start(ctx context.Context, names []string, opts Options) (*Cluster, error) {
	dir, err := os.MkdirTemp("", "idemetcd")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir}
	peers := make([]string, len(names))
	clientURLs := make([]string, len(names))
	ports, err := freePorts(2 * len(names))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	var initial []string
	for i, n := range names {
		peers[i] = fmt.Sprintf("http://127.0.0.1:%d", ports[2*i])
		clientURLs[i] = fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1])
		initial = append(initial, n+"="+peers[i])
	}
	type result struct {
		i   int
		e   *embed.Etcd
		err error
	}
	c.members = make([]*embed.Etcd, len(names))
	c.cfgs = make([]*embed.Config, len(names))
	started := make(chan result, len(names))
	for i, n := range names {
		cfg := embed.NewConfig()
		cfg.Name = n
		cfg.Dir = filepath.Join(dir, n)
		pu, _ := url.Parse(peers[i])
		cu, _ := url.Parse(clientURLs[i])
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
		cfg.InitialCluster = strings.Join(initial, ",")
		cfg.ClusterState = embed.ClusterStateFlagNew
		cfg.InitialClusterToken = filepath.Base(dir)
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
		cfg.UnsafeNoFsync = true
		if opts.Fast {
			cfg.TickMs, cfg.ElectionMs = 10, 100
		}
		c.cfgs[i] = cfg
		// Members of a new cluster block in StartEtcd until they reach a
		// quorum of peers, so start them concurrently.
		go func() {
			e, err := embed.StartEtcd(cfg)
			started <- result{i, e, err}
		}()
	}
	var errs []error
	for range names {
		r := <-started
		if r.err != nil {
			errs = append(errs, r.err)
		} else {
			c.members[r.i] = r.e
		}
	}
	if err := errors.Join(errs...); err != nil {
		c.Close()
		return nil, fmt.Errorf("etcdlocal: start: %w", err)
	}
	for _, e := range c.members {
		if err := ready(ctx, e); err != nil {
			c.Close()
			return nil, err
		}
	}
	c.clients = clientURLs
	return c, nil
}

func ready(ctx context.Context, e *embed.Etcd) error {
	select {
	case <-e.Server.ReadyNotify():
		return nil
	case err := <-e.Err():
		return fmt.Errorf("etcdlocal: member failed: %w", err)
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(30 * time.Second):
		return errors.New("etcdlocal: members not ready after 30s")
	}
}

// Kill crashes member i (in Start's names order) without a clean
// shutdown, as a process kill would: its clients' connections drop and the
// others elect a leader if it led. Restart brings it back.
func (c *Cluster) Kill(i int) {
	c.mu.Lock()
	e := c.members[i]
	c.members[i] = nil
	c.mu.Unlock()
	if e == nil {
		return
	}
	e.Server.HardStop()
	e.Close()
}

// Restart starts killed member i again on its data and ports, and waits
// until it has rejoined.
func (c *Cluster) Restart(ctx context.Context, i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.members[i] != nil {
		return nil
	}
	cfg := *c.cfgs[i]
	cfg.ClusterState = embed.ClusterStateFlagExisting
	e, err := embed.StartEtcd(&cfg)
	if err != nil {
		return fmt.Errorf("etcdlocal: restart %s: %w", cfg.Name, err)
	}
	if err := ready(ctx, e); err != nil {
		e.Close()
		return err
	}
	c.members[i] = e
	return nil
}

// Endpoints returns the members' client URLs.
func (c *Cluster) Endpoints() []string { return c.clients }

// Close stops every member and removes the data.
func (c *Cluster) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, e := range c.members {
		if e != nil {
			e.Close()
		}
		c.members[i] = nil
	}
	os.RemoveAll(c.dir)
}

// freePorts returns n distinct free loopback ports below the kernel's
// ephemeral range (freeport.Pick): a port from inside it can be taken by
// any outgoing connection before the member binds it.
func freePorts(n int) ([]int, error) { return freeport.Pick(n) }
