package daemon_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/daemon"
	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/internal/etcdlocal"
	"github.com/idemcoord/idemcoord/region"
)

// TestACleanShutdownFailsItsRegionOverAtOnce: Close (what idemd does on
// SIGTERM, after the drain) of a region's last instance hands the region
// over at once: another region's tracker sees it failed on its next read,
// without waiting a liveness TTL (the lease is revoked) nor the
// confirmation delay (here an hour) that a crash gets.
func TestACleanShutdownFailsItsRegionOverAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ec, err := etcdlocal.Start(ctx, []string{"m1"}, etcdlocal.Options{Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	d, err := daemon.Start(ctx, review2Config(t, ec.Endpoints()), daemon.Options{Logger: quiet(), Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Shutdown(context.Background())
	cli, err := clientv3.New(clientv3.Config{Endpoints: ec.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	topo, err := region.New("eu-west", []config.Region{{Name: "us-east", URL: "http://us-east.invalid"},
		{Name: "eu-west", URL: "http://eu-west.invalid"}})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := failover.NewTracker(failover.Config{Client: cli, Topology: topo, ConfirmDelay: time.Hour, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if states, err := tr.Refresh(ctx); err != nil || states["us-east"] != failover.Healthy {
		t.Fatalf("us-east while its instance runs: %v, %v; want healthy", states["us-east"], err)
	}
	if err := d.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	states, err := tr.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if states["us-east"] != failover.Failed {
		t.Fatalf("us-east right after its last instance shut down cleanly: %s, want failed (no confirmation delay)", states["us-east"])
	}
}
