package failover_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/store"
)

func repair(e env) failover.Repair {
	return failover.Repair{Client: e.cli, Directory: e.dir, Topology: e.topo, Audit: e.store}
}

// owners returns shard -> "owner/epoch/state".
func owners(t *testing.T, e env) map[int]ownership.Entry {
	out := map[int]ownership.Entry{}
	for _, en := range agree(t, e) {
		en.ModRevision = 0
		out[en.Shard] = en
	}
	return out
}

func entry(shard int, owner string, epoch int64, st ownership.State) ownership.Entry {
	return ownership.Entry{Shard: shard, Owner: owner, Epoch: epoch, State: st}
}

func TestFailoverAcceptFailbackAndDrainMoveTheRightShardsAudited(t *testing.T) {
	ctx := ctxT(t)
	e := setup(t)
	r := repair(e)
	want := map[int]ownership.Entry{}
	for s := range shards {
		want[s] = entry(s, e.topo.Home(s), 1, ownership.Active)
	}
	check := func(stage string) {
		t.Helper()
		got := owners(t, e)
		for s := range shards {
			if got[s] != want[s] {
				t.Errorf("%s: shard %d: %s, want %s", stage, s, got[s], want[s])
			}
		}
	}
	// A manual failover of us-east: its shards FAILED_OVER in eu-west.
	if _, err := r.Failover(ctx, "us-east", "oncall", "us-east unreachable"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []int{0, 3, 6, 9} {
		want[s] = entry(s, "eu-west", 2, ownership.FailedOver)
	}
	check("failover")
	// Accept shard 3 alone, then the rest of us-east's shards.
	if _, err := r.Accept(ctx, failover.ShardSelection(3), "oncall", "reconciled shard 3"); err != nil {
		t.Fatal(err)
	}
	want[3] = entry(3, "eu-west", 2, ownership.Active)
	check("accept shard 3")
	got, err := r.Accept(ctx, failover.RegionSelection("us-east"), "oncall", "reconciled us-east")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Errorf("accept --region us-east changed %d shards, want the 3 still FAILED_OVER: %+v", len(got), got)
	}
	for _, s := range []int{0, 6, 9} {
		want[s] = entry(s, "eu-west", 2, ownership.Active)
	}
	check("accept us-east")
	accepts, err := e.store.QueryAudit(ctx, store.AuditFilter{Shard: ptr(3)})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, a := range accepts {
		actions = append(actions, a.Action+" by "+a.Operator+": "+a.Reason)
	}
	if len(actions) != 2 || actions[0] != "failover_accept by oncall: reconciled shard 3" || !strings.HasPrefix(actions[1], "move_fence by oncall") {
		t.Errorf("audit of shard 3, newest first: %q", actions)
	}
	// Failback: us-east's shards home, ACTIVE, one more epoch.
	if _, err := r.Failback(ctx, "us-east", "oncall", "us-east back"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []int{0, 3, 6, 9} {
		want[s] = entry(s, "us-east", 3, ownership.Active)
	}
	check("failback")
	// Drain eu-west: its shards go to ap-south (its successor), ACTIVE.
	if _, err := r.Drain(ctx, "eu-west", "oncall", "eu-west maintenance"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []int{1, 4, 7, 10} {
		want[s] = entry(s, "ap-south", 2, ownership.Active)
	}
	check("drain")
	for _, action := range []string{"failover", "failback", "drain"} {
		if rows := audit(t, e.store, action); len(rows) != 1 || rows[0].Operator != "oncall" {
			t.Errorf("%s audit rows: %+v", action, rows)
		}
	}
	// Draining eu-west again moves nothing; failing back twice neither.
	if got, err := r.Failback(ctx, "us-east", "oncall", "again"); err != nil || len(got) != 0 {
		t.Errorf("second failback: %v %+v", err, got)
	}
	check("idempotent")
}

func TestRepairsRefuseWithoutOperatorReasonOrAKnownRegion(t *testing.T) {
	ctx := ctxT(t)
	e := setup(t)
	r := repair(e)
	if _, err := r.Drain(ctx, "us-east", "", "why"); !errors.Is(err, failover.ErrNoOperator) {
		t.Errorf("no operator: %v", err)
	}
	if _, err := r.Failback(ctx, "us-east", "me", " "); !errors.Is(err, failover.ErrNoOperator) {
		t.Errorf("no reason: %v", err)
	}
	if _, err := r.Failover(ctx, "mars", "me", "why"); !errors.Is(err, failover.ErrUnknownRegion) {
		t.Errorf("unknown region: %v", err)
	}
	owners(t, e) // and nothing moved
	for s, en := range owners(t, e) {
		if en.Epoch != 1 {
			t.Errorf("shard %d moved: %s", s, en)
		}
	}
}

// Drain with a health filter skips an unhealthy successor.
func TestDrainSkipsUnhealthyRegions(t *testing.T) {
	ctx := ctxT(t)
	e := setup(t)
	r := repair(e)
	r.Healthy = func(reg string) bool { return reg != "eu-west" }
	if _, err := r.Drain(ctx, "us-east", "oncall", "maintenance"); err != nil {
		t.Fatal(err)
	}
	for s, en := range owners(t, e) {
		if e.topo.Home(s) == "us-east" && (en.Owner != "ap-south" || en.State != ownership.Active) {
			t.Errorf("shard %d: %s, want ap-south ACTIVE (eu-west unhealthy)", s, en)
		}
	}
}

func ptr[T any](v T) *T { return &v }
