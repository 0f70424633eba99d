// Package etcdlocal runs a real etcd cluster inside the process, for the
// local dev cluster and for tests: one member per name, on loopback ports.
package etcdlocal

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Cluster is a running embedded etcd cluster.
type Cluster struct {
	dir     string
	members []*embed.Etcd
	clients []string
}

// Options tune the cluster.
type Options struct {
	// Fast selects test timers (10 ms ticks, 100 ms elections): leader
	// failover in ~150 ms instead of ~1 s.
	Fast bool
}

// Start starts one member per name and waits until all are ready.
func Start(ctx context.Context, names []string, opts Options) (*Cluster, error) {
	dir, err := os.MkdirTemp("", "idemetcd")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir}
	peers := make([]string, len(names))
	clientURLs := make([]string, len(names))
	var initial []string
	for i, n := range names {
		pp, err := freePort()
		if err != nil {
			return nil, err
		}
		cp, err := freePort()
		if err != nil {
			return nil, err
		}
		peers[i] = fmt.Sprintf("http://127.0.0.1:%d", pp)
		clientURLs[i] = fmt.Sprintf("http://127.0.0.1:%d", cp)
		initial = append(initial, n+"="+peers[i])
	}
	type result struct {
		e   *embed.Etcd
		err error
	}
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
		// Members of a new cluster block in StartEtcd until they reach a
		// quorum of peers, so start them concurrently.
		go func() {
			e, err := embed.StartEtcd(cfg)
			started <- result{e, err}
		}()
	}
	var errs []error
	for range names {
		r := <-started
		if r.err != nil {
			errs = append(errs, r.err)
		} else {
			c.members = append(c.members, r.e)
		}
	}
	if err := errors.Join(errs...); err != nil {
		c.Close()
		return nil, fmt.Errorf("etcdlocal: start: %w", err)
	}
	for _, e := range c.members {
		select {
		case <-e.Server.ReadyNotify():
		case err := <-e.Err():
			c.Close()
			return nil, fmt.Errorf("etcdlocal: member failed: %w", err)
		case <-ctx.Done():
			c.Close()
			return nil, ctx.Err()
		case <-time.After(30 * time.Second):
			c.Close()
			return nil, errors.New("etcdlocal: members not ready after 30s")
		}
	}
	c.clients = clientURLs
	return c, nil
}

// Endpoints returns the members' client URLs.
func (c *Cluster) Endpoints() []string { return c.clients }

// Close stops every member and removes the data.
func (c *Cluster) Close() {
	for _, e := range c.members {
		e.Close()
	}
	os.RemoveAll(c.dir)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
