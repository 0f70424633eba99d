package daemon_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/idemcoord/idemcoord/daemon"
	"github.com/idemcoord/idemcoord/internal/etcdlocal"
)

// TestLivenessLeaseTakesTheConfiguredTTL: etcd.liveness_ttl is the TTL
// of the lease the instance's liveness key lives under, so a region that
// stops answering loses its key (and, past confirm_delay, its shards)
// that long after its last keepalive.
func TestLivenessLeaseTakesTheConfiguredTTL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ec, err := etcdlocal.Start(ctx, []string{"m1"}, etcdlocal.Options{Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	cfg := review2Config(t, ec.Endpoints())
	cfg.Etcd.LivenessTTL = 3 * time.Second
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
	got, err := cli.Get(ctx, daemon.LivenessPrefix+"us-east/review2")
	if err != nil || len(got.Kvs) != 1 {
		t.Fatalf("liveness key after start: %v %v", got, err)
	}
	ttl, err := cli.TimeToLive(ctx, clientv3.LeaseID(got.Kvs[0].Lease))
	if err != nil {
		t.Fatal(err)
	}
	if ttl.GrantedTTL != 3 {
		t.Errorf("liveness lease granted TTL %ds, want the configured 3s", ttl.GrantedTTL)
	}
}
