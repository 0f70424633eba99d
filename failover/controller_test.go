package failover_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// start runs a controller named name until the test ends.
func start(t *testing.T, e env, name string, fake *clock.Fake, tune ...func(*failover.Config)) *failover.Controller {
	t.Helper()
	cfg := failover.Config{Client: client(t), Directory: e.dir, Topology: e.topo,
		Audit: e.store, Name: name, Clock: fake, ConfirmDelay: confirm, StartupGrace: grace, Logger: quiet()}
	for _, f := range tune {
		f(&cfg)
	}
	c, err := failover.NewController(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-c.Done() })
	return c
}

// everyRegion registers one instance per region.
func everyRegion(t *testing.T, e env) map[string]*member {
	out := map[string]*member{}
	for _, r := range regions {
		out[r] = instance(t, e.cli, e.pfx, r, "i1")
	}
	return out
}

// audit returns the audit rows of action.
func audit(t *testing.T, s *sqlstore.Store, action string) []store.AuditRow {
	t.Helper()
	rows, err := s.QueryAudit(context.Background(), store.AuditFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []store.AuditRow
	for _, r := range rows {
		if r.Action == action {
			out = append(out, r)
		}
	}
	return out
}

func TestControllerMovesEachShardOfAFailedRegionToItsFailoverRegionOnceAudited(t *testing.T) {
	e := setup(t)
	live := everyRegion(t, e)
	fake := clock.NewFake(epoch0())
	c := start(t, e, "c1", fake)
	eventually(t, "c1 to lead and see every region healthy", nil, func() bool {
		st := c.States()
		return c.Leading() && st["us-east"] == failover.Healthy && st["eu-west"] == failover.Healthy && st["ap-south"] == failover.Healthy
	})
	live["us-east"].kill()
	eventually(t, "us-east to fail over", func() { fake.Advance(failover.DefaultPollInterval) }, func() bool {
		entries, _, err := e.dir.List(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range entries {
			if en.Owner == "us-east" || en.State == ownership.Fencing {
				return false
			}
		}
		return len(audit(t, e.store, "region_failover")) > 0
	})
	if got := c.States()["us-east"]; got != failover.Failed {
		t.Errorf("us-east is %s, want failed", got)
	}
	for _, en := range agree(t, e) {
		home := e.topo.Home(en.Shard)
		want := ownership.Entry{Shard: en.Shard, Owner: home, Epoch: 1, State: ownership.Active}
		if home == "us-east" {
			want = ownership.Entry{Shard: en.Shard, Owner: "eu-west", Epoch: 2, State: ownership.FailedOver}
		}
		if en.Owner != want.Owner || en.Epoch != want.Epoch || en.State != want.State {
			t.Errorf("shard %d: %s, want %s", en.Shard, en, want)
		}
	}
	moves := audit(t, e.store, "move_fence")
	if len(moves) != shards/len(regions) {
		t.Errorf("%d move_fence audit rows, want one per us-east shard (%d)", len(moves), shards/len(regions))
	}
	for _, m := range moves {
		if m.Operator != failover.ControllerOperator || !strings.Contains(m.Reason, "us-east") {
			t.Errorf("move audit %+v: want operator %q and a reason naming us-east", m, failover.ControllerOperator)
		}
	}
	if rows := audit(t, e.store, "region_failover"); len(rows) == 0 || !strings.Contains(rows[0].Detail, "region=us-east") {
		t.Errorf("region_failover audit rows: %+v", rows)
	}
}

// A controller whose election lease was revoked while it still believed
// it led (as if paused past its lease) has every move refused by its
// guard and changes nothing; the new leader's moves commit.
func TestDeposedControllerWritesNothingAndOnlyTheLeaderMovesCommit(t *testing.T) {
	ctx := ctxT(t)
	e := setup(t)
	live := everyRegion(t, e)
	fake := clock.NewFake(epoch0())
	a := start(t, e, "a", fake)
	eventually(t, "a to lead", nil, a.Leading)
	b := start(t, e, "b", fake)
	deposed := a.LastGuard()
	// Revoke a's election lease behind its back: etcd deletes its key and
	// b's campaign wins.
	resp, err := e.cli.Get(ctx, e.pfx+"failover/leader/", clientv3WithPrefix()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if string(kv.Value) == "a" {
			if _, err := e.cli.Revoke(ctx, leaseOf(kv.Lease)); err != nil {
				t.Fatal(err)
			}
		}
	}
	eventually(t, "b to lead", nil, b.Leading)
	before := agree(t, e)
	// a still acts on its old term: nothing it writes commits.
	states := map[string]failover.RegionState{"us-east": failover.Healthy, "eu-west": failover.Healthy, "ap-south": failover.Failed}
	moved, err := a.FailRegion(ctx, deposed, "ap-south", states)
	if !errors.Is(err, ownership.ErrGuardFailed) {
		t.Fatalf("deposed controller's failover: %v, want ErrGuardFailed", err)
	}
	for _, m := range moved {
		if m.Err == "" {
			t.Errorf("deposed controller moved shard %d", m.Shard)
		}
	}
	after := agree(t, e)
	for i := range before {
		if before[i].Owner != after[i].Owner || before[i].Epoch != after[i].Epoch || before[i].State != after[i].State {
			t.Errorf("shard %d changed under a deposed controller: %s -> %s", i, before[i], after[i])
		}
	}
	if rows := audit(t, e.store, "move_fence"); len(rows) != 0 {
		t.Errorf("deposed controller left %d move audit rows", len(rows))
	}
	// The leader's moves commit.
	live["us-east"].kill()
	eventually(t, "b to fail us-east over", func() { fake.Advance(failover.DefaultPollInterval) }, func() bool {
		entries, _, err := e.dir.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range entries {
			if en.Owner == "us-east" || en.State == ownership.Fencing {
				return false
			}
		}
		return true
	})
	for _, en := range agree(t, e) {
		if e.topo.Home(en.Shard) == "ap-south" && (en.Owner != "ap-south" || en.Epoch != 1) {
			t.Errorf("ap-south shard %d: %s, want untouched", en.Shard, en)
		}
	}
}

// The failure is confirmed, and the shards moved, when the confirmation
// delay has passed, not at the next poll: here the poll is an hour away.
func TestControllerFailsARegionOverWhenItsConfirmationFallsDueNotAtTheNextPoll(t *testing.T) {
	ctx := ctxT(t)
	e := setup(t)
	live := everyRegion(t, e)
	fake := clock.NewFake(epoch0())
	c := start(t, e, "c1", fake, func(c *failover.Config) { c.PollInterval = time.Hour })
	eventually(t, "c1 to lead and see us-east healthy", nil, func() bool {
		return c.Leading() && c.States()["us-east"] == failover.Healthy
	})
	live["us-east"].kill()
	eventually(t, "the watch to make us-east suspect", nil, func() bool { return c.States()["us-east"] == failover.Suspect })
	fake.Advance(confirm)
	eventually(t, "us-east's shards to move", nil, func() bool {
		en, err := e.dir.Get(ctx, 9)
		return err == nil && en.Owner == "eu-west" && en.State == ownership.FailedOver
	})
}
