package failover_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// claimOn claims a new operation for an actor of shard under tok: an
// operation in flight at tok's epoch.
func claimOn(t *testing.T, s *sqlstore.Store, want int, tok fencing.Token) *store.Lease {
	t.Helper()
	actor := ""
	for i := 0; actor == ""; i++ {
		if a := fmt.Sprintf("tenant/actor-%d", i); shard.Of(a, shards) == want {
			actor = a
		}
	}
	k, err := idempotency.ParseKeyHeader("in-flight")
	if err != nil {
		t.Fatal(err)
	}
	fp, err := idempotency.ComputeFingerprint(idempotency.Request{Method: "POST", Path: "/v1/payments",
		ContentType: "application/json", Body: []byte(`{"amount":1}`)}, idempotency.FingerprintOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Begin(context.Background(), store.ClaimRequest{
		Scope: store.Scope{Actor: actor, Endpoint: "POST /v1/payments", Key: k}, Fingerprint: fp,
		Token: tok, Worker: "eu-west-i1", Lease: 30 * time.Second, TTL: time.Hour})
	if err != nil || c.Outcome != store.FirstRun {
		t.Fatalf("claim on shard %d: %v %v", want, c.Outcome, err)
	}
	return c.Lease
}

// TestARegionFailoverLeavesAPlannedMoveToItsDrain: an operator moves a
// shard between two healthy regions (eu-west to ap-south), and the move
// drains an operation eu-west has in flight at the retiring epoch. Then
// us-east fails. The controller fails us-east's shards over, finishes the
// interrupted transfers that are a failover's (away from us-east, or a
// controller's own), and leaves the planned move alone: the in-flight
// operation records its result (its client already has the answer), and
// only then does the move fence the shard and finish.
func TestARegionFailoverLeavesAPlannedMoveToItsDrain(t *testing.T) {
	ctx := ctxT(t)
	e := setup(t)
	live := everyRegion(t, e)
	fake := clock.NewFake(epoch0())
	c := start(t, e, "c1", fake, func(c *failover.Config) { c.StuckAfter = time.Hour }) // no repair of a stuck transfer here
	eventually(t, "c1 to lead and see every region healthy", nil, func() bool {
		st := c.States()
		return c.Leading() && st["us-east"] == failover.Healthy && st["eu-west"] == failover.Healthy && st["ap-south"] == failover.Healthy
	})

	const moving = 1 // home and owner eu-west, epoch 1
	lease := claimOn(t, e.store, moving, fencing.Token{Shard: moving, Epoch: 1, Region: "eu-west"})
	type result struct {
		en  ownership.Entry
		err error
	}
	done := make(chan result, 1)
	go func() {
		en, err := e.dir.Move(ctx, moving, "ap-south", ownership.Active, "alice", "maintenance, CHG-1",
			ownership.DrainFor(time.Minute))
		done <- result{en, err}
	}()
	eventually(t, "the planned move to fence the shard and drain", nil, func() bool {
		en, err := e.dir.Get(ctx, moving)
		return err == nil && en.State == ownership.Fencing
	})

	// Two transfers a failover does finish, left FENCING by movers that
	// died: one away from us-east (an operator's), one of an earlier
	// failover (the controller's own, which never drains).
	interrupted := map[int]ownership.Entry{
		3: {Owner: "ap-south", Epoch: 2, State: ownership.Fencing, Transfer: &ownership.Transfer{FromOwner: "us-east",
			FromEpoch: 1, FromState: ownership.Active, Final: ownership.Active, Operator: "bob", Reason: "planned move"}},
		2: {Owner: "eu-west", Epoch: 2, State: ownership.Fencing, Transfer: &ownership.Transfer{FromOwner: "ap-south",
			FromEpoch: 1, FromState: ownership.Active, Final: ownership.FailedOver, Operator: failover.ControllerOperator,
			Reason: "region ap-south failed"}},
	}
	for shard, en := range interrupted {
		b, err := json.Marshal(en)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.cli.Put(ctx, fmt.Sprintf("%sshards/%05d", e.pfx, shard), string(b)); err != nil {
			t.Fatal(err)
		}
	}

	live["us-east"].kill()
	eventually(t, "us-east to fail over", func() { fake.Advance(failover.DefaultPollInterval) }, func() bool {
		entries, _, err := e.dir.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range entries {
			if en.Owner == "us-east" {
				return false
			}
		}
		return len(audit(t, e.store, "region_failover")) > 0
	})
	if en, err := e.dir.Get(ctx, moving); err != nil || en.State != ownership.Fencing || en.Transfer == nil ||
		en.Transfer.Operator != "alice" {
		t.Fatalf("the planned move's shard after us-east failed over: %s (%v), want still FENCING, draining alice's move", en, err)
	}
	for shard, left := range interrupted {
		if en, err := e.dir.Get(ctx, shard); err != nil || en.Owner != left.Owner || en.Epoch != 2 || en.State != left.Transfer.Final {
			t.Errorf("interrupted transfer of shard %d after the failover: %s (%v), want finished to %s epoch 2 %s",
				shard, en, err, left.Owner, left.Transfer.Final)
		}
	}
	select {
	case r := <-done:
		t.Fatalf("the planned move returned (%s, %v) while its operation was in flight: its drain was cut", r.en, r.err)
	default:
	}

	// The operation in flight records its result at the retiring epoch.
	if err := e.store.Finish(ctx, lease, store.Result{State: idempotency.Completed,
		Snapshot: store.Snapshot{Status: 201, Body: []byte(`{"paid":1}`)}}); err != nil {
		t.Fatalf("finish of the operation the planned move was draining: %v, want recorded", err)
	}
	r := <-done
	if r.err != nil || r.en.Owner != "ap-south" || r.en.Epoch != 2 || r.en.State != ownership.Active {
		t.Fatalf("planned move after its drain: %s, %v; want ap-south epoch 2 ACTIVE", r.en, r.err)
	}
	agree(t, e)
}

// TestADrainTheStuckTransferRepairWouldCutIsRefused: a planned move's
// drain that lasts as long as the controller's StuckAfter would be cut
// by the controller finishing the transfer under it. A Repair with such a
// DrainTimeout is refused, naming both fields, before it moves anything;
// a shorter drain, or a longer StuckAfter, is accepted.
func TestADrainTheStuckTransferRepairWouldCutIsRefused(t *testing.T) {
	for _, tc := range []struct {
		drain, stuckAfter time.Duration
		ok                bool
	}{
		{10 * time.Second, 0, true},
		{59 * time.Second, 0, true},
		{failover.DefaultStuckAfter, 0, false},
		{2 * time.Minute, 0, false},
		{2 * time.Minute, 5 * time.Minute, true},
		{-time.Second, 0, false},
	} {
		err := failover.CheckDrain("DrainTimeout", tc.drain, tc.stuckAfter)
		if (err == nil) != tc.ok {
			t.Errorf("CheckDrain(%s, StuckAfter %s) = %v, want ok %v", tc.drain, tc.stuckAfter, err, tc.ok)
		}
	}

	ctx := ctxT(t)
	e := setup(t)
	before := agree(t, e)
	r := failover.Repair{Client: e.cli, Directory: e.dir, Topology: e.topo, Audit: e.store, DrainTimeout: 2 * time.Minute}
	for name, call := range map[string]func() ([]failover.Moved, error){
		"drain":    func() ([]failover.Moved, error) { return r.Drain(ctx, "us-east", "alice", "maintenance") },
		"failback": func() ([]failover.Moved, error) { return r.Failback(ctx, "us-east", "alice", "maintenance") },
	} {
		moved, err := call()
		if !errors.Is(err, failover.ErrBadConfig) || !strings.Contains(err.Error(), "DrainTimeout") ||
			!strings.Contains(err.Error(), "StuckAfter") || len(moved) != 0 {
			t.Errorf("%s with DrainTimeout 2m: %d moved, %v; want ErrBadConfig naming DrainTimeout and StuckAfter, nothing moved",
				name, len(moved), err)
		}
	}
	after := agree(t, e)
	for i := range before {
		if before[i].Epoch != after[i].Epoch || before[i].Owner != after[i].Owner {
			t.Errorf("shard %d moved by a refused repair: %s -> %s", i, before[i], after[i])
		}
	}
}
