// Package etcdtest gives a test binary one real, embedded 3-member etcd
// cluster (fast timers) that its tests share, each under its own key
// prefix, and clients to it. It is stopped by Main.
package etcdtest

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/idemcoord/idemcoord/internal/etcdlocal"
	"github.com/idemcoord/idemcoord/internal/pgtest"
)

// startTimeout bounds the shared cluster's start (three members wait up
// to a second for each other; more under -race on a busy machine).
const startTimeout = time.Minute

var (
	once    sync.Once
	shared  *etcdlocal.Cluster
	started error
)

// Main runs the tests with pgtest.Main (a throwaway PostgreSQL) and stops
// the shared etcd cluster afterwards; call it from TestMain.
func Main(m *testing.M) {
	code := pgtest.Main(m)
	if shared != nil {
		shared.Close()
	}
	os.Exit(code)
}

// Cluster returns the shared 3-member cluster, started on first use.
func Cluster(t testing.TB) *etcdlocal.Cluster {
	t.Helper()
	once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		shared, started = etcdlocal.Start(ctx, []string{"a", "b", "c"}, etcdlocal.Options{Fast: true})
	})
	if started != nil {
		t.Fatalf("etcd: %v", started)
	}
	return shared
}

// Client connects to endpoints (extra dial options, such as a call
// counter, are added) and is closed when the test ends.
func Client(t testing.TB, endpoints []string, dial ...grpc.DialOption) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second,
		Logger: zap.NewNop(), DialOptions: dial})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// Prefix is the test's own key prefix.
func Prefix(t testing.TB) string {
	return "/test/" + strings.ReplaceAll(t.Name(), "/", "_") + "/"
}
