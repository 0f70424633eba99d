package failover_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/internal/etcdlocal"
	"github.com/idemcoord/idemcoord/internal/etcdtest"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/internal/testutil"
	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/region"
	"github.com/idemcoord/idemcoord/sqlstore"
)

func TestMain(m *testing.M) { etcdtest.Main(m) }

// cluster is the etcd cluster the package's tests share; each test works
// under its own prefix.
func cluster(t testing.TB) *etcdlocal.Cluster { return etcdtest.Cluster(t) }

func client(t *testing.T) *clientv3.Client { return benchClient(t) }

func benchClient(t testing.TB) *clientv3.Client { return etcdtest.Client(t, cluster(t).Endpoints()) }

func prefix(t *testing.T) string { return etcdtest.Prefix(t) }

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// regions is the tests' topology: us-east fails over to eu-west, eu-west
// to ap-south, ap-south to us-east (list order, wrapping).
var regions = []string{"us-east", "eu-west", "ap-south"}

func topology(t *testing.T) *region.Topology { return topologyB(t) }

func topologyB(t testing.TB) *region.Topology {
	t.Helper()
	var rs []config.Region
	for _, n := range regions {
		rs = append(rs, config.Region{Name: n, URL: "http://" + n + ".invalid"})
	}
	topo, err := region.New(regions[0], rs)
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func epoch0() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }

// env is one test's directory, store and etcd client.
type env struct {
	cli   *clientv3.Client
	dir   *ownership.Directory
	store *sqlstore.Store
	topo  *region.Topology
	pfx   string
}

const shards = 12

func setup(t *testing.T) env {
	t.Helper()
	s, err := sqlstore.Open(context.Background(), sqlstore.Config{Migrate: true, DSN: pgtest.NewDatabase(t), Seed: 1, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	cli := client(t)
	d := ownership.NewDirectory(cli, s, ownership.WithPrefix(prefix(t)), ownership.WithLogger(quiet()))
	topo := topology(t)
	if err := d.Bootstrap(context.Background(), topo, shards); err != nil {
		t.Fatal(err)
	}
	return env{cli: cli, dir: d, store: s, topo: topo, pfx: prefix(t)}
}

// member is one registered instance of a region.
type member struct {
	l   *ownership.Liveness
	cli *clientv3.Client
}

// instance registers a liveness key for region/name. Its lease is a
// minute long, so only kill (which revokes it) makes it vanish; its
// keepalives run on a clock of its own that never moves.
func instance(t *testing.T, cli *clientv3.Client, pfx, reg, name string) *member {
	t.Helper()
	l, err := ownership.NewLiveness(ownership.LivenessConfig{Client: cli, Prefix: pfx,
		Region: reg, Instance: name, TTL: time.Minute, Clock: clock.NewFake(epoch0()), Logger: quiet()})
	if err == nil {
		err = l.Start(context.Background())
	}
	if err != nil {
		t.Fatal(err)
	}
	m := &member{l: l, cli: cli}
	t.Cleanup(m.kill)
	return m
}

// kill closes the instance, so its key is gone at once, as etcd drops it
// one TTL after a crash. Liveness.Close revokes the lease before it stops
// its loop, and the loop may register once more in between (a key under
// a fresh lease nobody keeps alive): kill revokes that one too.
func (m *member) kill() {
	m.l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := m.cli.Get(ctx, m.l.Key())
	if err == nil && len(resp.Kvs) == 1 {
		m.cli.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease))
	}
}

// agree fails unless etcd and the SQL fences hold the same owner and
// epoch for every shard, and returns the entries.
func agree(t *testing.T, e env) []ownership.Entry {
	t.Helper()
	ctx := context.Background()
	entries, _, err := e.dir.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := e.store.Fences(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(rows) {
		t.Fatalf("etcd has %d shards, SQL %d", len(entries), len(rows))
	}
	for i, en := range entries {
		f := rows[i]
		if en.Shard != f.Shard || en.Owner != f.Owner || en.Epoch != f.Epoch || !en.Serving() {
			t.Errorf("shard %d: etcd %s, SQL epoch %d owner %q", f.Shard, en, f.Epoch, f.Owner)
		}
	}
	return entries
}

// eventually runs step (which may move a fake clock) until cond holds,
// failing after a minute of wall time. The short pause between rounds
// lets etcd and the store answer; no test waits on a lease this way.
func eventually(t *testing.T, what string, step func(), cond func() bool) {
	t.Helper()
	testutil.Eventually(t, time.Minute, func() error {
		if cond() {
			return nil
		}
		if step != nil {
			step()
		}
		return fmt.Errorf("waiting for %s", what)
	})
}
