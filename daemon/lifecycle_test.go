package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/idemcoord/idemcoord/authn"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/daemon"
	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/internal/etcdlocal"
	"github.com/idemcoord/idemcoord/internal/lifecycle"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/region"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/sqlstore"
)

// lifecycleParts are the real parts the components of the lifecycle
// contract test run on: one embedded etcd (each component under a prefix
// of its own) and a migrated store.
type lifecycleParts struct {
	etcd  *etcdlocal.Cluster
	cli   *clientv3.Client
	store *sqlstore.Store
	topo  *region.Topology
}

func newLifecycleParts(t *testing.T) *lifecycleParts {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ec, err := etcdlocal.Start(ctx, []string{"m1"}, etcdlocal.Options{Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ec.Close)
	cli, err := clientv3.New(clientv3.Config{Endpoints: ec.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	s, err := sqlstore.Open(ctx, sqlstore.Config{DSN: pgtest.NewDatabase(t), Migrate: true, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	topo, err := region.New("us-east", []config.Region{{Name: "us-east", URL: "http://us-east.invalid"},
		{Name: "eu-west", URL: "http://eu-west.invalid"}})
	if err != nil {
		t.Fatal(err)
	}
	// A single-region gateway refuses a store whose shards have no owner.
	if err := s.BootstrapFences(ctx, shard.DefaultCount, topo.Home); err != nil {
		t.Fatal(err)
	}
	return &lifecycleParts{etcd: ec, cli: cli, store: s, topo: topo}
}

// TestEveryLongLivedComponentFollowsTheLifecycle checks the one lifecycle
// (internal/lifecycle) on every component that owns goroutines, each on
// real parts: Start returns with the component running (Done open, Err
// nil); Close stops it (Done closed, Err nil) and may be called again;
// the end of Start's context stops it too, with the context's cause as
// Err; Close before Start leaves it stopped and Start refused.
func TestEveryLongLivedComponentFollowsTheLifecycle(t *testing.T) {
	p := newLifecycleParts(t)
	n := 0
	pfx := func() string { n++; return fmt.Sprintf("/lifecycle/%d/", n) }
	components := []struct {
		name string
		new  func(t *testing.T) lifecycle.Component
	}{
		{"failover.Tracker", func(t *testing.T) lifecycle.Component {
			tr, err := failover.NewTracker(failover.Config{Client: p.cli, Topology: p.topo, Prefix: pfx(), Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			return tr
		}},
		{"failover.Controller", func(t *testing.T) lifecycle.Component {
			prefix := pfx()
			dir := ownership.NewDirectory(p.cli, p.store, ownership.WithPrefix(prefix), ownership.WithLogger(quiet()))
			c, err := failover.NewController(failover.Config{Client: p.cli, Directory: dir, Topology: p.topo,
				Audit: p.store, Name: "us-east/lifecycle", Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}},
		{"ownership.Cache", func(t *testing.T) lifecycle.Component {
			cfg := ownership.DefaultCacheConfig()
			cfg.Client, cfg.Prefix, cfg.Logger = p.cli, pfx(), quiet()
			c, err := ownership.NewCache(cfg)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}},
		{"ownership.Liveness", func(t *testing.T) lifecycle.Component {
			cfg := ownership.DefaultLivenessConfig()
			cfg.Client, cfg.Prefix, cfg.Region, cfg.Instance, cfg.Logger = p.cli, pfx(), "us-east", "i1", quiet()
			l, err := ownership.NewLiveness(cfg)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}},
		{"gateway.Gateway", func(t *testing.T) lifecycle.Component {
			cfg := review2Config(t, nil)
			ep := cfg.Endpoints[0]
			ep.Async = true // its recovery loop runs too
			authCfg, err := cfg.AuthConfig()
			if err != nil {
				t.Fatal(err)
			}
			v, err := authn.NewVerifier(authCfg)
			if err != nil {
				t.Fatal(err)
			}
			up, _ := url.Parse(cfg.Upstream)
			g, err := gateway.New(gateway.Config{Region: "us-east", Worker: "w", Store: p.store, Auth: v,
				Endpoints: []config.Endpoint{ep}, Next: gateway.NewProxy(up, nil)})
			if err != nil {
				t.Fatal(err)
			}
			return g
		}},
		{"daemon.Daemon", func(t *testing.T) lifecycle.Component {
			// A region instance bootstraps the directory under the
			// default prefix: an etcd of its own.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			ec, err := etcdlocal.Start(ctx, []string{"m1"}, etcdlocal.Options{Fast: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(ec.Close)
			d, err := daemon.New(review2Config(t, ec.Endpoints()), daemon.Options{Logger: quiet(), Migrate: true})
			if err != nil {
				t.Fatal(err)
			}
			return d
		}},
	}
	for _, c := range components {
		t.Run(c.name, func(t *testing.T) {
			t.Run("Close stops it cleanly, twice", func(t *testing.T) {
				comp := c.new(t)
				if err := comp.Start(t.Context()); err != nil {
					t.Fatalf("Start: %v", err)
				}
				if isDone(comp) || comp.Err() != nil {
					t.Fatalf("running: Done closed %v, Err %v; want open, nil", isDone(comp), comp.Err())
				}
				for i := 1; i <= 2; i++ {
					if err := comp.Close(); err != nil {
						t.Fatalf("Close #%d: %v", i, err)
					}
					if !isDone(comp) || comp.Err() != nil {
						t.Fatalf("after Close #%d: Done closed %v, Err %v; want closed, nil", i, isDone(comp), comp.Err())
					}
				}
			})
			t.Run("the end of its context stops it", func(t *testing.T) {
				comp := c.new(t)
				ctx, cancel := context.WithCancel(t.Context())
				if err := comp.Start(ctx); err != nil {
					t.Fatalf("Start: %v", err)
				}
				cancel()
				select {
				case <-comp.Done():
				case <-t.Context().Done():
					t.Fatal("still running after its context ended")
				}
				if !errors.Is(comp.Err(), context.Canceled) {
					t.Fatalf("Err after its context ended = %v, want context.Canceled", comp.Err())
				}
				comp.Close() // still safe
			})
			t.Run("Close before Start leaves it stopped", func(t *testing.T) {
				comp := c.new(t)
				if err := comp.Close(); err != nil {
					t.Fatalf("Close before Start: %v", err)
				}
				if !isDone(comp) {
					t.Fatal("Done open after Close before Start")
				}
				if err := comp.Start(t.Context()); err == nil {
					comp.Close()
					t.Fatal("Start after Close succeeded")
				}
			})
		})
	}
}

func isDone(c lifecycle.Component) bool {
	select {
	case <-c.Done():
		return true
	default:
		return false
	}
}
