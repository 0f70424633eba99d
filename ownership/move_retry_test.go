package ownership_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.opentelemetry.io/otel/sdk/metric"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/internal/etcdtest"
	"github.com/idemcoord/idemcoord/internal/retry"
	"github.com/idemcoord/idemcoord/internal/testutil"
	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/sqlstore"
)

// faultyDirectory is a directory on the test's prefix and store whose
// etcd transactions fault as fault says (etcdtest.TxnFaults), with its
// log, its retry metric and its transaction count.
func faultyDirectory(t *testing.T, s *sqlstore.Store, fault func(n int64) etcdtest.Fault,
	opts ...ownership.Option) (*ownership.Directory, *testutil.LogBuffer, *metric.ManualReader, *atomic.Int64) {
	t.Helper()
	var txns atomic.Int64
	logs := &testutil.LogBuffer{}
	reader := metric.NewManualReader()
	mp := metric.NewMeterProvider(metric.WithReader(reader))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	opts = append([]ownership.Option{ownership.WithPrefix(prefix(t)), ownership.WithLogger(logs.Logger()),
		ownership.WithMeter(mp.Meter("test"))}, opts...)
	d := ownership.NewDirectory(client(t, cluster(t).Endpoints(), etcdtest.TxnFaults(&txns, fault)), s, opts...)
	return d, logs, reader, &txns
}

// movedOnce fails unless shard went from epoch 1 to epoch 2 owned by to,
// ACTIVE, in etcd and in SQL, with one audited fence move, and its etcd
// key was written exactly twice since the bootstrap (FENCING, then
// ACTIVE).
func movedOnce(t *testing.T, d *ownership.Directory, s *sqlstore.Store, shard int, to string) {
	t.Helper()
	ctx := context.Background()
	got := agree(t, d, s)[shard]
	if got.Owner != to || got.Epoch != 2 || got.State != ownership.Active {
		t.Fatalf("shard %d: %s, want %s at epoch 2 ACTIVE", shard, got, to)
	}
	resp, err := client(t, cluster(t).Endpoints()).Get(ctx, fmt.Sprintf("%sshards/%05d", prefix(t), shard))
	if err != nil {
		t.Fatal(err)
	}
	if v := resp.Kvs[0].Version; v != 3 {
		t.Fatalf("shard %d's key has version %d, want 3 (bootstrap, FENCING, ACTIVE: one move)", shard, v)
	}
	if moves := fenceMoves(t, s); moves != 1 {
		t.Fatalf("%d audited fence moves, want exactly one", moves)
	}
}

// TestAMoveRidesOutEtcdTimeoutsOfEitherWrite: a move on a busy etcd whose
// start (FENCING) or finish (ACTIVE) write times out ("etcdserver:
// request timed out"), before it ran or after it was applied, still moves
// the shard, exactly once: epoch +1, one fence bump, two writes of its
// key. The retry is logged (naming the step and shard) and counted in
// idemcoord.ownership.etcd_retries.
func TestAMoveRidesOutEtcdTimeoutsOfEitherWrite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		txn   int64 // 1: the start write, 2: the finish write
		fault etcdtest.Fault
	}{
		{"start_lost_before", 1, etcdtest.LostBefore},
		{"start_lost_after_applied", 1, etcdtest.LostAfter},
		{"finish_lost_before", 2, etcdtest.LostBefore},
		{"finish_lost_after_applied", 2, etcdtest.LostAfter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			const shard = 3
			_, s, _ := setup(t, 6)
			d, logs, reader, txns := faultyDirectory(t, s, func(n int64) etcdtest.Fault {
				if n == tc.txn {
					return tc.fault
				}
				return etcdtest.Pass
			})
			got, err := d.Move(ctx, shard, "eu-west", ownership.Active, "oncall", "drain")
			if err != nil {
				t.Fatalf("move with its write %d timed out: %v", tc.txn, err)
			}
			if got.Owner != "eu-west" || got.Epoch != 2 || got.State != ownership.Active {
				t.Fatalf("move returned %s, want eu-west at epoch 2 ACTIVE", got)
			}
			if n := txns.Load(); n < 3 {
				t.Fatalf("%d transactions: the injected timeout did not happen", n)
			}
			movedOnce(t, d, s, shard, "eu-west")
			if n := testutil.MetricSum(t, reader, "idemcoord.ownership.etcd_retries"); n != 1 {
				t.Errorf("idemcoord.ownership.etcd_retries = %d, want 1", n)
			}
			if out := logs.String(); !strings.Contains(out, "etcd busy") || !strings.Contains(out, `"shard":3`) {
				t.Errorf("no warning naming the retried shard in the log:\n%s", out)
			}
		})
	}
}

// TestAMoveThatKeepsTimingOutIsRolledForwardByTheNext: when etcd keeps
// timing the finish write out past retry.Default.Etcd, the move returns
// the timeout (as *retry.ExhaustedError) and leaves the shard FENCING with
// the SQL fence moved; the next Move, by anyone, finishes that very
// transfer without a second fence bump or epoch.
func TestAMoveThatKeepsTimingOutIsRolledForwardByTheNext(t *testing.T) {
	ctx := ctxT(t)
	const shard = 2
	plain, s, _ := setup(t, 6)
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	d, _, reader, _ := faultyDirectory(t, s, func(n int64) etcdtest.Fault {
		if n == 1 {
			return etcdtest.Pass // the start write
		}
		return etcdtest.LostBefore
	}, ownership.WithClock(fake))
	// Move the fake clock past each backoff as soon as the mover waits.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			fake.BlockUntil(1)
			select {
			case <-stop:
				return
			default:
			}
			fake.Advance(time.Minute)
		}
	}()
	_, err := d.Move(ctx, shard, "eu-west", ownership.Active, "oncall", "drain")
	close(stop)
	fake.NewTimer(time.Hour) // wakes the clock mover to see stop
	wg.Wait()
	var ex *retry.ExhaustedError
	if !errors.As(err, &ex) || !errors.Is(err, rpctypes.ErrTimeout) {
		t.Fatalf("move whose finish write always times out: %v, want the timeout, retries exhausted", err)
	}
	if n := testutil.MetricSum(t, reader, "idemcoord.ownership.etcd_retries"); n != int64(retry.Default.Etcd.Attempts-1) {
		t.Errorf("idemcoord.ownership.etcd_retries = %d, want %d", n, retry.Default.Etcd.Attempts-1)
	}
	left, err := plain.Get(ctx, shard)
	if err != nil {
		t.Fatal(err)
	}
	if left.State != ownership.Fencing || left.Epoch != 2 || left.Owner != "eu-west" {
		t.Fatalf("after the failed move: %s, want FENCING to eu-west at epoch 2", left)
	}
	if ep, owner, err := s.Fence(ctx, shard); err != nil || ep != 2 || owner != "eu-west" {
		t.Fatalf("SQL fence after the failed move: epoch %d owner %q (%v), want 2 eu-west", ep, owner, err)
	}
	got, err := plain.Move(ctx, shard, "eu-west", ownership.Active, "oncall", "drain again")
	if err != nil || got.Epoch != 2 || got.Owner != "eu-west" || got.State != ownership.Active {
		t.Fatalf("the next move: %s, %v; want eu-west at epoch 2 ACTIVE", got, err)
	}
	movedOnce(t, plain, s, shard, "eu-west")
}

// TestAMoveWhoseLostWriteWasNotAppliedReportsTheMoveMadeMeanwhile: the
// start write of a move times out before it ran, and before it is run
// again another mover moves the shard. The retry reports that move as a
// conflict and changes nothing: the shard moved once, to the other
// mover's target.
func TestAMoveWhoseLostWriteWasNotAppliedReportsTheMoveMadeMeanwhile(t *testing.T) {
	ctx := ctxT(t)
	const shard = 0 // home us-east
	plain, s, _ := setup(t, 6)
	d, _, _, _ := faultyDirectory(t, s, func(n int64) etcdtest.Fault {
		switch n {
		case 1:
			return etcdtest.LostBefore
		case 2: // before the retry: another mover's move
			if _, err := plain.Move(ctx, shard, "ap-south", ownership.Active, "other", "meanwhile"); err != nil {
				t.Errorf("the other move: %v", err)
			}
		}
		return etcdtest.Pass
	})
	got, err := d.Move(ctx, shard, "eu-west", ownership.Active, "oncall", "drain")
	var mc *fencing.MoveConflictError
	if !errors.As(err, &mc) || mc.Owner != "ap-south" || mc.Epoch != 2 {
		t.Fatalf("move whose lost write another move overtook: %s, %v, want a conflict naming ap-south at epoch 2", got, err)
	}
	movedOnce(t, plain, s, shard, "ap-south")
}

// TestAMoveRecognisesItsLostStartAfterItsStartGuardStoppedHolding: the
// start write (FENCING) of a move guarded by GuardStart was applied but
// its answer lost, and the start guard stopped holding before the write
// is run again. The retry recognises the transfer as its own (it started
// while the guard held) and finishes it, rather than reporting
// ErrGuardFailed and leaving the shard FENCING.
func TestAMoveRecognisesItsLostStartAfterItsStartGuardStoppedHolding(t *testing.T) {
	ctx := ctxT(t)
	const shard = 5 // home ap-south
	plain, s, _ := setup(t, 6)
	marker := prefix(t) + "marker"
	other := client(t, cluster(t).Endpoints())
	d, _, _, _ := faultyDirectory(t, s, func(n int64) etcdtest.Fault {
		switch n {
		case 1:
			return etcdtest.LostAfter
		case 2: // before the retry: the start guard stops holding
			if _, err := other.Put(ctx, marker, "x"); err != nil {
				t.Errorf("put the marker: %v", err)
			}
		}
		return etcdtest.Pass
	})
	got, err := d.Move(ctx, shard, "eu-west", ownership.FailedOver, "controller", "region us-east failed",
		ownership.GuardStart(clientv3.Compare(clientv3.CreateRevision(marker), "=", 0)))
	if err != nil || got.Owner != "eu-west" || got.Epoch != 2 || got.State != ownership.FailedOver {
		t.Fatalf("move whose applied start was lost: %s, %v; want eu-west at epoch 2 FAILED_OVER", got, err)
	}
	if _, err := plain.Move(ctx, shard, "eu-west", ownership.Active, "oncall", "accept"); err != nil {
		t.Fatal(err)
	}
	e, err := plain.Get(ctx, shard)
	if err != nil || e.Epoch != 3 {
		t.Fatalf("after a further move: %s, %v; want epoch 3", e, err)
	}
}
