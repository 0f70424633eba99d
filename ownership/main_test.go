package ownership_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.opentelemetry.io/otel/sdk/metric"
	"google.golang.org/grpc"

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

// client connects to endpoints; extra dial options (a call counter) are
// added.
func client(t *testing.T, endpoints []string, dial ...grpc.DialOption) *clientv3.Client {
	return etcdtest.Client(t, endpoints, dial...)
}

// prefix is the test's own directory prefix.
func prefix(t *testing.T) string { return etcdtest.Prefix(t) }

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// regions is the three-region topology of the tests.
var regions = []string{"us-east", "eu-west", "ap-south"}

func topology(t *testing.T) *region.Topology {
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

// openStore opens a real store on a fresh database; reader sees its counters.
func openStore(t *testing.T) (*sqlstore.Store, *metric.ManualReader) {
	t.Helper()
	reader := metric.NewManualReader()
	mp := metric.NewMeterProvider(metric.WithReader(reader))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	s, err := sqlstore.Open(context.Background(), sqlstore.Config{Migrate: true, DSN: pgtest.NewDatabase(t), Seed: 1,
		Meter: mp.Meter("test"), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, reader
}

// fenced returns the store's idemcoord_fenced_writes_rejected_total.
func fenced(t *testing.T, r *metric.ManualReader) int64 {
	t.Helper()
	return testutil.MetricSum(t, r, "idemcoord.fenced_writes_rejected")
}

// setup bootstraps shards shards in a directory under the test's prefix
// on the shared cluster and a fresh store.
func setup(t *testing.T, shards int) (*ownership.Directory, *sqlstore.Store, *metric.ManualReader) {
	t.Helper()
	s, r := openStore(t)
	d := ownership.NewDirectory(client(t, cluster(t).Endpoints()), s, ownership.WithPrefix(prefix(t)),
		ownership.WithLogger(quiet()))
	if err := d.Bootstrap(context.Background(), topology(t), shards); err != nil {
		t.Fatal(err)
	}
	return d, s, r
}

// agree fails unless etcd's entries and the SQL fence rows hold the same
// owner and epoch for every shard (no shard FENCING).
func agree(t *testing.T, d *ownership.Directory, s *sqlstore.Store) []ownership.Entry {
	t.Helper()
	ctx := context.Background()
	entries, _, err := d.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.Fences(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(rows) {
		t.Fatalf("etcd has %d shards, SQL %d", len(entries), len(rows))
	}
	for i, e := range entries {
		f := rows[i]
		if e.Shard != f.Shard || e.Owner != f.Owner || e.Epoch != f.Epoch || !e.Serving() {
			t.Errorf("shard %d: etcd %s, SQL epoch %d owner %q", f.Shard, e, f.Epoch, f.Owner)
		}
	}
	return entries
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// failoverPlans lists d and plans, for every shard that from owns, its
// failover to to (the moves a controller makes when from is lost).
func failoverPlans(ctx context.Context, t *testing.T, d *ownership.Directory, from, to string) []ownership.Planned {
	t.Helper()
	entries, _, err := d.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var plans []ownership.Planned
	for _, e := range entries {
		if e.Owner == from {
			plans = append(plans, ownership.Planned{Entry: e, To: to, Final: ownership.FailedOver})
		}
	}
	return plans
}
