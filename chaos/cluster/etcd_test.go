package cluster

import (
	"context"
	"slices"
	"testing"

	"github.com/idemcoord/idemcoord/internal/etcdlocal"
)

// unkillable gives a real etcd cluster the Members shape; killing is
// internal/etcdlocal's (Kill, Restart) once the regions work adds it.
type unkillable struct{ *etcdlocal.Cluster }

func (unkillable) Kill(int)                           {}
func (unkillable) Restart(context.Context, int) error { return nil }

func TestEtcdMembersFindsTheLeaderOfARealCluster(t *testing.T) {
	ctx := context.Background()
	names := []string{"us-east", "eu-west", "ap-south"}
	c, err := etcdlocal.Start(ctx, names, etcdlocal.Options{Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e := NewEtcdMembers(unkillable{c}, names)
	leader, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(names, leader) {
		t.Fatalf("leader %q is not a member", leader)
	}
	if err := e.KillMember(ctx, "nobody"); err == nil {
		t.Error("killing an unknown member succeeded")
	}
}
