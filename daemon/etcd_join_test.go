package daemon_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/daemon"
	"github.com/idemcoord/idemcoord/internal/etcdlocal"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/internal/testutil"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// review2Config returns a valid one-endpoint region config on a fresh
// database, listening on a free loopback port.
func review2Config(t *testing.T, etcd []string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	secret := filepath.Join(dir, "hs256.secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("k", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	y := fmt.Sprintf(`region: us-east
listen: 127.0.0.1:0
upstream: http://127.0.0.1:1
worker_id: review2
store: {dsn: %q}
etcd: {endpoints: [%s], dial_timeout: 1s}
auth: {issuer: dev, audience: idemcoord, hs256_secret_file: %q}
endpoints:
  - {name: create-payment, method: POST, path: /v1/payments}
`, pgtest.NewDatabase(t), strings.Join(etcd, ", "), secret)
	cfg, err := config.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// An unreachable etcd must make Start fail within its dial timeout, and a
// cancelled ctx (SIGTERM during `idemd run` startup) must stop it: the
// session is created with context.WithoutCancel(ctx) and no deadline.
func TestStartGivesUpOnUnreachableEtcd(t *testing.T) {
	dead := "http://" + testutil.RefusingAddr(t) // nothing listens there
	cfg := review2Config(t, []string{dead})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		d, err := daemon.Start(ctx, cfg, daemon.Options{Logger: quiet(), Migrate: true})
		if err == nil {
			d.Shutdown(context.Background())
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Start succeeded with an unreachable etcd")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("daemon.Start still blocked 20s after start with an unreachable etcd (dial_timeout 1s, ctx cancelled after 3s)")
	}
}

// The liveness key must be kept while the instance runs: after its session
// lease is lost (an etcd partition longer than the TTL, here a revoke) the
// instance must put it back under a new lease.
func TestLivenessKeyRestoredAfterLeaseLoss(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ec, err := etcdlocal.Start(ctx, []string{"m1"}, etcdlocal.Options{Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	cfg := review2Config(t, ec.Endpoints())
	d, err := daemon.Start(ctx, cfg, daemon.Options{Logger: quiet(), Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Shutdown(context.Background())
	cli, err := clientv3.New(clientv3.Config{Endpoints: ec.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	key := daemon.LivenessPrefix + "us-east/review2"
	got, err := cli.Get(ctx, key)
	if err != nil || len(got.Kvs) != 1 {
		t.Fatalf("liveness key after start: %v %v", got, err)
	}
	if _, err := cli.Revoke(ctx, clientv3.LeaseID(got.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	// 3x the 5s liveness TTL: the instance re-registers on its own.
	testutil.Eventually(t, 15*time.Second, func() error {
		got, err := cli.Get(ctx, key)
		if err == nil && len(got.Kvs) == 1 {
			return nil
		}
		return fmt.Errorf("liveness key %s still missing after its lease was lost, while the instance keeps serving (%v)", key, err)
	})
}
