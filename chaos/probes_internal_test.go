package chaos

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/store"
	"github.com/idemcoord/idemcoord/store/backend"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// twoClusters is a drill cluster whose store is two clusters (two
// databases, as the replicated store's per-region Patroni clusters):
// even shards homed in "a", odd ones in "b"; its DSN is the first's.
type twoClusters struct{ dsns [2]string }

func (c twoClusters) DSN() string { return c.dsns[0] }

func (c twoClusters) home(n int) string {
	if n%2 == 0 {
		return "a"
	}
	return "b"
}

func (c twoClusters) ProbeStore() (backend.Options, bool) {
	return backend.Options{Store: config.Store{Backend: config.PatroniStoreBackend, GroupCommit: config.GroupCommit{MaxBatch: 1},
		Patroni: config.PatroniStore{AuditCluster: "a", Clusters: []config.PatroniCluster{
			{Name: "a", DSN: c.dsns[0]}, {Name: "b", DSN: c.dsns[1]}}}},
		Shards: shard.DefaultCount, Home: c.home, MaxConns: 2, Logger: slog.New(slog.DiscardHandler)}, true
}

// TestTheProbesReadAndClaimInTheClusterThatHoldsTheShard: on a store of
// several clusters the drill's probes (the takeover probe's dead claim,
// the stale-epoch probe) read a shard's fence and claim in the cluster
// the gateways route that shard to, not in the first cluster, where a
// shard homed elsewhere has no owner and every claim is refused (the
// store-failover drill at seed 5 lost its takeover coverage so).
func TestTheProbesReadAndClaimInTheClusterThatHoldsTheShard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := twoClusters{dsns: [2]string{pgtest.NewDatabase(t), pgtest.NewDatabase(t)}}
	// The clusters as the drill's daemons leave them: migrated, fences
	// bootstrapped with each shard owned by its home.
	opts, _ := c.ProbeStore()
	opts.Migrate = true
	daemons, err := backend.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	err = daemons.BootstrapFences(ctx, shard.DefaultCount, c.home)
	daemons.Close()
	if err != nil {
		t.Fatal(err)
	}
	pr, err := newProber(ctx, c, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.close()
	actor := ""
	for i := 0; actor == ""; i++ {
		if a := "tenant/probe-" + string(rune('a'+i)); c.home(shard.Of(a, shard.DefaultCount)) == "b" {
			actor = a
		}
	}
	n := shard.Of(actor, shard.DefaultCount)
	epoch, owner, err := pr.store.Fence(ctx, n)
	if err != nil || owner != "b" {
		t.Fatalf("fence of shard %d (homed in b) read by the probes = %d, %q, %v; want owned by b", n, epoch, owner, err)
	}
	fp, err := idempotency.ComputeFingerprint(idempotency.Request{Method: "POST", Path: "/pay", ContentType: "application/json",
		Body: []byte(`{"amount":1}`)}, idempotency.FingerprintOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := pr.store.Begin(ctx, store.ClaimRequest{
		Scope:       store.Scope{Actor: actor, Endpoint: "create-payment", Key: idempotency.Key("probe-key-1")},
		Fingerprint: fp, Worker: "probe", Lease: time.Minute, TTL: time.Hour,
		Token: fencing.Token{Shard: n, Epoch: epoch, Region: owner},
	})
	if err != nil || cl.Outcome != store.FirstRun {
		t.Fatalf("the probe's claim on shard %d: %+v, %v; want a first run", n, cl, err)
	}
}
