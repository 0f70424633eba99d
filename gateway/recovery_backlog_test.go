package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/region"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/sqlstore"
)

// Two async endpoints: create-thing (POST /v1/things) fails over by
// transfer, export-held (POST /v1/held) by reject.
const (
	transferAsync = asyncEndpoint + "    failover: transfer\n"
	rejectAsync   = "  - name: export-held\n    method: POST\n    path: /v1/held\n    key: required\n" +
		asyncEndpoint + "    failover: reject\n"
)

// backlogCase is a backlog of stranded tasks the live region must not run
// (held), in front of one task it must run: alice's create-thing task,
// whose shard the live region "east" owns.
type backlogCase struct {
	name string
	// holder is the actor of the held tasks and path the endpoint's.
	holder, path string
	// liveEndpoints is the live region's configuration.
	liveEndpoints string
	// aliceState is the state of alice's shard in east's directory cache.
	aliceState string
	// hold makes the held tasks unrunnable after they were queued.
	hold func(t *testing.T, s *sqlstore.Store, held []uuid.UUID)
	// scans is how many scans may pass before the runnable task runs: the
	// scan filters what is held by policy, ownership or configuration (1);
	// what it cannot filter (a request that no longer decodes) is paged
	// past (backlog/batch + 1).
	scans int
}

const (
	backlogBatch = 2
	backlogSize  = 5 // more than two batches
)

// TestAHeldBacklogNeverDelaysARunnableTask: region west queued async tasks
// and died; east now owns alice's shard. In front of alice's task sits a
// backlog, larger than a recovery batch, of stranded tasks east must not
// run. East's recovery runs alice's task anyway, within one scan when the
// backlog is held by policy, ownership or configuration (the scan asks
// only for what east may run), within the scans it takes to page past an
// undecodable backlog; and it runs none of the held tasks.
func TestAHeldBacklogNeverDelaysARunnableTask(t *testing.T) {
	for _, tc := range []backlogCase{
		{name: "reject endpoint on a failed-over shard", holder: "alice", path: "/v1/held",
			liveEndpoints: transferAsync + rejectAsync, aliceState: gateway.ShardFailedOver, scans: 1},
		{name: "another region's shard", holder: "bob", path: "/v1/things",
			liveEndpoints: transferAsync, aliceState: gateway.ShardActive, scans: 1},
		{name: "another configuration's endpoint", holder: "alice", path: "/v1/held",
			liveEndpoints: transferAsync, aliceState: gateway.ShardActive, scans: 1},
		{name: "requests that no longer decode", holder: "alice", path: "/v1/things",
			liveEndpoints: transferAsync, aliceState: gateway.ShardActive,
			hold: func(t *testing.T, s *sqlstore.Store, held []uuid.UUID) {
				if _, err := s.Pool().Exec(context.Background(),
					`UPDATE async_requests SET request = $2 WHERE operation_id = ANY($1)`, held, []byte("\x00not a request")); err != nil {
					t.Fatal(err)
				}
			},
			scans: backlogSize/backlogBatch + 1},
	} {
		t.Run(tc.name, func(t *testing.T) { heldBacklog(t, tc) })
	}
}

func heldBacklog(t *testing.T, tc backlogCase) {
	lease := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	s := storeOnClock(t, lease, 16)
	ctx := context.Background()
	if _, err := s.Pool().Exec(ctx, `UPDATE shard_fences SET owner_region = 'west', epoch = 1`); err != nil {
		t.Fatal(err)
	}
	aliceShard, bobShard := shard.Of("t/alice", shard.DefaultCount), shard.Of("t/bob", shard.DefaultCount)
	if aliceShard == bobShard {
		t.Fatal("setup: alice and bob share a shard")
	}

	// West queues the tasks, then dies with them in flight (its clock,
	// which would drive heartbeats, never moves again).
	dead := hangingExecutor{entered: make(chan struct{}, backlogSize+1), release: make(chan struct{})}
	west, err := gateway.New(gateway.Config{Region: "west", Worker: "west-dead", Store: s, Auth: verifier(t),
		Endpoints: endpoints(t, transferAsync+rejectAsync), Next: dead, Clock: clock.NewFake(lease.Now()),
		Recovery: gateway.RecoveryConfig{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	startGateway(t, west)
	t.Cleanup(func() { close(dead.release); west.Close() })
	srvWest := httptest.NewServer(west)
	defer srvWest.Close()
	queue := func(subject, path, key string) uuid.UUID {
		t.Helper()
		code, h, body := do(t, post(t, srvWest.URL+path, token(t, subject), key, `{"export":"csv"}`))
		if code != http.StatusAccepted {
			t.Fatalf("queue %s %s: %s", subject, key, describe(code, h, body))
		}
		<-dead.entered
		return uuid.MustParse(h.Get(gateway.HeaderOperationID))
	}
	var held []uuid.UUID
	for i := range backlogSize {
		held = append(held, queue(tc.holder, tc.path, "held-"+string(rune('a'+i))))
	}
	lease.Advance(time.Second) // the backlog expires first: it is the oldest
	queue("alice", "/v1/things", "runnable")
	if tc.hold != nil {
		tc.hold(t, s, held)
	}

	// Alice's shard moved to east (by failover or by a move); bob's stays
	// west's.
	if _, err := s.Pool().Exec(ctx, `UPDATE shard_fences SET owner_region = 'east', epoch = 2 WHERE shard = $1`,
		aliceShard); err != nil {
		t.Fatal(err)
	}
	owners := newOwners()
	owners.set(aliceShard, "east", 2, tc.aliceState)
	owners.set(bobShard, "west", 1, gateway.ShardActive)
	topo, err := region.New("east", []config.Region{{Name: "east", URL: "http://127.0.0.1:1"},
		{Name: "west", URL: "http://127.0.0.1:2"}})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	recoveryClock := clock.NewFake(lease.Now())
	east, err := gateway.New(gateway.Config{Region: "east", Worker: "east-live", Store: s, Auth: verifier(t),
		Endpoints: endpoints(t, tc.liveEndpoints), Next: gateway.NewProxy(countingUpstream(t, &runs, true), nil),
		Owners: owners, Topology: topo,
		Recovery: gateway.RecoveryConfig{Clock: recoveryClock, Batch: backlogBatch}})
	if err != nil {
		t.Fatal(err)
	}
	startGateway(t, east)
	defer east.Close()

	lease.Advance(31 * time.Second) // every lease of the dead region has expired
	runnable := reviewScope(t, "alice", "runnable")
	st := idempotency.State("")
	for i := range tc.scans {
		recoveryClock.Advance(gateway.DefaultRecoveryInterval)
		wait := 300 * time.Millisecond // a scan that only skips is one read
		if i == tc.scans-1 {
			wait = 5 * time.Second // the last scan's run reaches the upstream
		}
		if st = waitState(t, s, runnable, idempotency.Completed, wait); st == idempotency.Completed {
			break
		}
	}
	if st != idempotency.Completed {
		t.Fatalf("alice's task after %d scans: %s, want COMPLETED: a backlog of %d held tasks (batch %d) stands in front of it",
			tc.scans, st, backlogSize, backlogBatch)
	}
	if got := runs.Load(); got != 1 {
		t.Errorf("upstream ran %d tasks, want 1: only alice's runnable task", got)
	}
	for _, id := range held {
		var state string
		if err := s.Pool().QueryRow(ctx, `SELECT state FROM idempotency_records WHERE operation_id = $1`, id).Scan(&state); err != nil {
			t.Fatal(err)
		}
		if state != string(idempotency.Pending) {
			t.Errorf("held task %s is %s, want PENDING: east must not run it", id, state)
		}
	}
}
