package ownership_test

import (
	"errors"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idemcoord/idemcoord/ownership"
)

func TestMoveRefusedWhenItsGuardNoLongerHolds(t *testing.T) {
	ctx := ctxT(t)
	d, s, _ := setup(t, 3)
	cli := client(t, cluster(t).Endpoints())
	leader := prefix(t) + "leader"
	put, err := cli.Put(ctx, leader, "controller-1")
	if err != nil {
		t.Fatal(err)
	}
	guard := clientv3.Compare(clientv3.CreateRevision(leader), "=", put.Header.Revision)
	if _, err := d.Move(ctx, 1, "ap-south", ownership.FailedOver, "controller-1", "eu-west down", ownership.Guard(guard)); err != nil {
		t.Fatalf("move under a holding guard: %v", err)
	}
	// The controller lost its key (and another took it): its moves stop.
	if _, err := cli.Delete(ctx, leader); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, leader, "controller-2"); err != nil {
		t.Fatal(err)
	}
	_, err = d.Move(ctx, 2, "us-east", ownership.FailedOver, "controller-1", "ap-south down", ownership.Guard(guard))
	if !errors.Is(err, ownership.ErrGuardFailed) {
		t.Fatalf("move under a broken guard: %v, want ErrGuardFailed", err)
	}
	got := agree(t, d, s)
	if got[2].Owner != "ap-south" || got[2].Epoch != 1 {
		t.Fatalf("shard 2 after the refused move: %s, want untouched", got[2])
	}
}
