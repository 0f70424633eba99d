package cluster

import (
	"context"
	"log/slog"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idemcoord/idemcoord/chaos/history"
	"github.com/idemcoord/idemcoord/chaos/validate"
	"github.com/idemcoord/idemcoord/demo/bank"
	"github.com/idemcoord/idemcoord/demo/payments"
	"github.com/idemcoord/idemcoord/internal/etcdlocal"
	"github.com/idemcoord/idemcoord/internal/pglocal"
	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/sqlstore"
)

// homes is a three-region topology: shard s lives in homes[s%3].
type homes []string

func (h homes) Home(shard int) string { return h[shard%len(h)] }

// The history read from a real etcd holds every transfer the ownership
// package wrote, as the checker's I8 reads it: a failover and a failback
// of one shard pass I8 against the real SQL fence, whole and after etcd
// compacted the older revisions.
func TestDirectoryHistoryHoldsEveryTransferTheOwnershipPackageWrote(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and etcd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg, err := pglocal.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	quiet := slog.New(slog.DiscardHandler)
	store, err := sqlstore.Open(ctx, sqlstore.Config{DSN: pg.DSN("postgres"), Migrate: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := payments.Migrate(ctx, store.Pool()); err != nil {
		t.Fatal(err)
	}
	if err := bank.Migrate(ctx, store.Pool()); err != nil {
		t.Fatal(err)
	}
	etcd, err := etcdlocal.Start(ctx, []string{"us-east"}, etcdlocal.Options{Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: etcd.Endpoints(), DialTimeout: historyDial})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	dir := ownership.NewDirectory(cli, store, ownership.WithLogger(quiet))
	if err := dir.Bootstrap(ctx, homes{"us-east", "eu-west", "ap-south"}, 6); err != nil {
		t.Fatal(err)
	}
	if _, err := dir.Move(ctx, 0, "eu-west", ownership.FailedOver, "drill", "failover"); err != nil {
		t.Fatal(err)
	}
	if _, err := dir.Move(ctx, 0, "us-east", ownership.Active, "drill", "failback"); err != nil {
		t.Fatal(err)
	}

	check := func(t *testing.T, wantRevs int, complete bool) {
		t.Helper()
		h, err := ReadDirectoryHistory(ctx, cli, dir.Prefix())
		if err != nil {
			t.Fatal(err)
		}
		if len(h) != 6 {
			t.Fatalf("history of %d shards, want 6", len(h))
		}
		s0 := h[0]
		if len(s0.Revisions) != wantRevs || s0.Complete != complete {
			t.Fatalf("shard 0: %d revisions (complete %v), want %d (complete %v): %+v",
				len(s0.Revisions), s0.Complete, wantRevs, complete, s0.Revisions)
		}
		last := s0.Revisions[len(s0.Revisions)-1]
		if last.Owner != "us-east" || last.Epoch != 3 || last.State != "ACTIVE" {
			t.Errorf("shard 0 ends at %+v, want us-east epoch 3 ACTIVE", last)
		}
		st, err := validate.ReadState(ctx, store.Pool())
		if err != nil {
			t.Fatal(err)
		}
		res := validate.Check(history.History{}, st, validate.Options{DirectoryHistory: h})
		if vs := res.Of(validate.I8); len(vs) > 0 || res.Checked[validate.I8] != 6 {
			t.Errorf("I8 over %d shards: %v", res.Checked[validate.I8], vs)
		}
	}
	t.Run("whole", func(t *testing.T) {
		// ACTIVE 1, FENCING 2, FAILED_OVER 2, FENCING 3, ACTIVE 3.
		check(t, 5, true)
	})
	t.Run("compacted", func(t *testing.T) {
		h, err := ReadDirectoryHistory(ctx, cli, dir.Prefix())
		if err != nil {
			t.Fatal(err)
		}
		// Keep the failover's end and what followed.
		if _, err := cli.Compact(ctx, h[0].Revisions[2].Revision); err != nil {
			t.Fatal(err)
		}
		check(t, 3, false)
	})
}
