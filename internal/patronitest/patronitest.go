// Package patronitest starts a real 3-member Patroni cluster for a test,
// on the test binary's shared embedded etcd (internal/etcdtest) under the
// test's own namespace, and stops it when the test ends.
package patronitest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/internal/etcdtest"
	"github.com/idemcoord/idemcoord/internal/patronilocal"
)

// startTimeout bounds a cluster's start: bootstrap, two base backups and
// the first synchronous standby take seconds on a quiet machine, and over
// two minutes were seen with a load average of 35 on 2 cores.
const startTimeout = 5 * time.Minute

// Option changes the config Start uses.
type Option func(*patronilocal.Config)

// WithConfig lets the test edit the config (timers, Async, Strict,
// Parameters) before the cluster starts.
func WithConfig(f func(*patronilocal.Config)) Option { return Option(f) }

// Start starts a cluster of three members, "a", "b" and "c", in regions of
// the same names. It fails the test, naming the package to install, when
// Patroni 4 is missing.
func Start(t testing.TB, opts ...Option) *patronilocal.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if _, err := patronilocal.Version(ctx); err != nil {
		if errors.Is(err, patronilocal.ErrNotInstalled) || errors.Is(err, patronilocal.ErrTooOld) {
			t.Fatalf("patronitest: %v", err)
		}
		t.Fatal(err)
	}
	etcd := etcdtest.Cluster(t)
	cfg := patronilocal.DefaultConfig()
	cfg.Scope = "t"
	cfg.Namespace = "/patronitest/" + strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + "/"
	cfg.Members = []patronilocal.MemberSpec{{Name: "a", Region: "a"}, {Name: "b", Region: "b"}, {Name: "c", Region: "c"}}
	cfg.EtcdEndpoints = etcd.Endpoints()
	for _, o := range opts {
		o(&cfg)
	}
	c, err := patronilocal.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop() })
	return c
}
