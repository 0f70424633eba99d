package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/testutil"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/sqlstore"
)

// dedupBank is an upstream shared by every region that takes effect at
// most once per operation id, as the demo payments service does by its
// unique constraint: a repeat of an operation id answers the first
// execution's answer and charges nothing. Its resolve path answers what
// it charged. East's first execution hangs after the charge, as a region
// that died mid-call leaves it, until release is closed; with
// lateEast it hangs before the charge instead (a zombie's call that lands
// late).
type dedupBank struct {
	mu       sync.Mutex
	charges  map[string]int // operation id -> charges
	reached  chan string    // the operation id of east's call once it hangs
	release  chan struct{}
	once     sync.Once
	lateEast bool
}

// unblock lets east's hanging call answer (once; a test's cleanup calls
// it too, so a failed test never leaves a server waiting on it).
func (b *dedupBank) unblock() { b.once.Do(func() { close(b.release) }) }

func newDedupBank() *dedupBank {
	return &dedupBank{charges: map[string]int{}, reached: make(chan string, 1), release: make(chan struct{})}
}

func (b *dedupBank) total() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, c := range b.charges {
		n += c
	}
	return n
}

func (b *dedupBank) handler(region string) http.Handler {
	mux := http.NewServeMux()
	answer := func(w http.ResponseWriter, op string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"charge":"`+op+`"}`)
	}
	mux.HandleFunc("POST /v1/things", func(w http.ResponseWriter, r *http.Request) {
		op := r.Header.Get(gateway.HeaderOperationID)
		hang := func() {
			b.reached <- op
			<-b.release
		}
		if region == "east" && b.lateEast {
			hang()
		}
		b.mu.Lock()
		first := b.charges[op] == 0
		if first {
			b.charges[op] = 1
		}
		b.mu.Unlock()
		if first && region == "east" && !b.lateEast {
			hang()
		}
		answer(w, op)
	})
	mux.HandleFunc("GET /internal/operations/{id}", func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		n := b.charges[r.PathValue("id")]
		b.mu.Unlock()
		if n == 0 {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, resolutionBody(http.StatusCreated, `{"charge":"`+r.PathValue("id")+`"}`))
	})
	return mux
}

// inFlightInEast starts a payment in east (the owner at epoch 1), waits
// until east's call hangs at the bank (charged, or with lateEast not
// yet), then fails the
// shard over to west at epoch 2: the SQL fence, then both regions'
// directory caches. It returns the operation id and east's answer, once
// the bank is released.
func inFlightInEast(t *testing.T, s *sqlstore.Store, bank *dedupBank, east, west *regionGW, key, body string) (string, <-chan int) {
	t.Helper()
	answered := make(chan int, 1)
	go func() {
		resp, err := http.DefaultClient.Do(post(t, east.url+"/v1/things", token(t, "alice"), key, body))
		if err != nil {
			t.Error(err)
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	return moveWhileInEast(t, s, bank, east, west), answered
}

// dedupRegions starts east (the owner) and west on one store in front of
// one dedupBank, on a transfer endpoint with dedup (its upstream_dedup
// line, or ""), and no move sweep: only a request may take an operation
// over. (A sweep whose clock never ticks is not enough since the sweep
// also wakes at each change of the directory cache: it then raced the
// request for the takeover, and a request that lost got 409 in-progress,
// as in CI at 295ff8a.)
func dedupRegions(t *testing.T, dedup string) (*sqlstore.Store, *dedupBank, *regionGW, *regionGW) {
	t.Helper()
	s := openStore(t, 16)
	bank := newDedupBank()
	idle := gateway.RecoveryConfig{Disabled: true}
	east, west := startRegions(t, s, "east", regionsOptions{endpoint: "    failover: transfer\n" + dedup,
		upstream: bank.handler, recovery: idle})
	return s, bank, east, west
}

// moveWhileInEast waits until east's call of a payment hangs at the bank,
// then fails the shard over to west at epoch 2 (the SQL fence, then both
// regions' directory caches), and returns the operation id.
func moveWhileInEast(t *testing.T, s *sqlstore.Store, bank *dedupBank, east, west *regionGW) string {
	t.Helper()
	t.Cleanup(bank.unblock) // before the servers close
	var op string
	select {
	case op = <-bank.reached:
	case <-time.After(10 * time.Second):
		t.Fatal("east's payment never reached the bank")
	}
	if err := s.MoveFence(context.Background(), fencing.Move{Shard: actorShard, From: 1, To: "west",
		Operator: "test", Reason: "east failed"}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*regionGW{east, west} {
		r.owners.set(actorShard, "west", 2, gateway.ShardFailedOver)
	}
	return op
}

// TestAnInFlightIntentOfAMovedShardIsAnsweredToItsRetryAtOnce: a payment
// in flight in east (the bank charged it; east's call hangs, as in a
// region that died mid-call) when east's shard fails over to west under
// a new epoch. On an endpoint whose upstream deduplicates by operation id
// (upstream_dedup: operation_id, with a resolve path) the retry at west
// takes the operation over at once (no clock moves: the dead holder's
// 30 s lease is live), asks the resolve path and answers the one charge,
// same operation id. Without the declaration the retry gets 409
// in-progress with Retry-After for the rest of the lease, as before:
// a late upstream call could still land there. Either way east's late
// result is refused by the fence, and the bank charged once.
func TestAnInFlightIntentOfAMovedShardIsAnsweredToItsRetryAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dedup  string
		status int
	}{
		{"upstream dedups by operation id", "    upstream_dedup: operation_id\n", http.StatusCreated},
		{"no declaration", "", http.StatusConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, bank, east, west := dedupRegions(t, tc.dedup) // only the retry may take over here
			const body = `{"amount":"7.00"}`
			op, eastAnswer := inFlightInEast(t, s, bank, east, west, "moved-in-flight", body)

			st, hd, b := do(t, post(t, west.url+"/v1/things", token(t, "alice"), "moved-in-flight", body))
			if st != tc.status {
				t.Fatalf("retry at the new owner: %s; want %d", describe(st, hd, b), tc.status)
			}
			if got := hd.Get(gateway.HeaderOperationID); got != op {
				t.Errorf("retry answered operation %q; want the in-flight %q", got, op)
			}
			switch st {
			case http.StatusCreated:
				if !strings.Contains(b, op) {
					t.Errorf("retry answer %s; want the charge of %s", describe(st, hd, b), op)
				}
				if state := waitState(t, s, reviewScope(t, "alice", "moved-in-flight"), idempotency.Completed, time.Second); state != idempotency.Completed {
					t.Errorf("record %s after the answer; want COMPLETED", state)
				}
			case http.StatusConflict:
				if !strings.Contains(b, "in-progress") || hd.Get("Retry-After") == "" {
					t.Errorf("refusal %s: want in-progress with Retry-After", describe(st, hd, b))
				}
			}

			bank.unblock()
			// East's result is refused by the fence. With the declaration
			// east hands the call to west, which answers from its record
			// (handoff_test.go); without it, 503 and Retry-After.
			want := map[int]int{http.StatusCreated: http.StatusCreated, http.StatusConflict: http.StatusServiceUnavailable}[tc.status]
			if got := <-eastAnswer; got != want {
				t.Errorf("east's own answer after the move: %d; want %d (its result refused by the fence)", got, want)
			}
			if n := bank.total(); n != 1 {
				t.Errorf("bank charged %d times; want 1", n)
			}
		})
	}
}

// TestANewOwnerSettlesAMovedShardsInFlightIntentWithoutARetry: the same
// payment left in flight by east; nobody retries. West's move sweep sees
// in its directory cache that it received the shard (its clock moved by
// one sweep interval: no lease is waited out), takes the operation over,
// learns from the resolve path that it ran, and records it: COMPLETED
// with the bank's answer. The client's retry, whenever it comes, is a
// replay; the bank charged once.
func TestANewOwnerSettlesAMovedShardsInFlightIntentWithoutARetry(t *testing.T) {
	s := openStore(t, 16)
	bank := newDedupBank()
	clk := clock.NewFake(time.Now())
	east, west := startRegions(t, s, "east", regionsOptions{
		endpoint: "    failover: transfer\n    upstream_dedup: operation_id\n",
		upstream: bank.handler, recovery: gateway.RecoveryConfig{Clock: clk}})
	const body = `{"amount":"7.00"}`
	op, eastAnswer := inFlightInEast(t, s, bank, east, west, "settled-by-sweep", body)
	sc := reviewScope(t, "alice", "settled-by-sweep")
	if rec, err := s.Read(context.Background(), sc); err != nil || rec.State != idempotency.InProgress {
		t.Fatalf("record before the sweep: %+v, %v; want IN_PROGRESS", rec.State, err)
	}

	testutil.Eventually(t, 10*time.Second, func() error {
		clk.Advance(gateway.DefaultMoveSweepInterval) // one more sweep
		rec, err := s.Read(context.Background(), sc)
		if err != nil || rec.State != idempotency.Completed {
			return fmt.Errorf("the new owner did not settle the moved shard's in-flight intent: %s, %v", rec.State, err)
		}
		if !strings.Contains(string(rec.Snapshot.Body), op) || rec.Snapshot.Status != http.StatusCreated {
			t.Errorf("recorded %d %s; want the bank's 201 for %s", rec.Snapshot.Status, rec.Snapshot.Body, op)
		}
		return nil
	})
	st, hd, b := do(t, post(t, west.url+"/v1/things", token(t, "alice"), "settled-by-sweep", body))
	if st != http.StatusCreated || hd.Get("Idempotent-Replayed") != "true" || hd.Get(gateway.HeaderOperationID) != op {
		t.Errorf("retry after the sweep: %s; want the replayed 201 of %s", describe(st, hd, b), op)
	}
	bank.unblock()
	<-eastAnswer
	if n := bank.total(); n != 1 {
		t.Errorf("bank charged %d times; want 1", n)
	}
}

// TestANewOwnersMoveSweepSettlesAMovedShardsInFlightIntentAsSoonAsItSeesTheMove:
// the payment east left in flight; nobody retries, and the sweep's clock
// never moves (no sweep interval passes). The change of west's directory
// cache that gives it the shard wakes its sweep, which takes the
// operation over and records the bank's answer. Before, the sweep looked
// at the cache only every interval (500 ms), so an intent left in flight
// waited for the next tick: 0.16-0.2 s after the move in zombie-pause
// sdk seed 4, and never here.
func TestANewOwnersMoveSweepSettlesAMovedShardsInFlightIntentAsSoonAsItSeesTheMove(t *testing.T) {
	s := openStore(t, 16)
	bank := newDedupBank()
	frozen := gateway.RecoveryConfig{Clock: clock.NewFake(time.Now())}
	east, west := startRegions(t, s, "east", regionsOptions{
		// east's call hangs past the test: only the sweep can settle it
		endpoint: "    failover: transfer\n    upstream_dedup: operation_id\n    upstream_timeout: 55s\n    lease: 60s\n",
		upstream: bank.handler, recovery: frozen})
	const body = `{"amount":"7.00"}`
	op, eastAnswer := inFlightInEast(t, s, bank, east, west, "settled-at-the-move", body)
	sc := reviewScope(t, "alice", "settled-at-the-move")
	testutil.Eventually(t, 10*time.Second, func() error {
		rec, err := s.Read(context.Background(), sc)
		if err != nil || rec.State != idempotency.Completed {
			return fmt.Errorf("the new owner did not settle the moved shard's in-flight intent at the move: %s, %v", rec.State, err)
		}
		if !strings.Contains(string(rec.Snapshot.Body), op) {
			t.Errorf("recorded %d %s; want the bank's answer for %s", rec.Snapshot.Status, rec.Snapshot.Body, op)
		}
		return nil
	})
	bank.unblock()
	<-eastAnswer
	if n := bank.total(); n != 1 {
		t.Errorf("bank charged %d times; want 1", n)
	}
}

// TestAMoveSweepDoesNotWaitForTheResolvePathOfAnIntentItAlreadyTookOver:
// east left two payments in flight, alice's and bob's, in two shards that
// fail over to west one after the other (two changes of west's directory
// cache, as a failover's batches land). West's sweep takes alice's over at
// the first change and asks the resolve path, which hangs here. Bob's is
// still taken over and settled at the second change: the sweep does not
// wait for the resolve paths of the intents it already took over before
// looking again (the stage's Close waits for them). Before, it waited, so
// the intents of a failover's later batches were settled only after the
// earlier ones' resolve paths answered (0.2 s later in zombie-pause sdk
// seed 4). The sweep's clock never moves.
func TestAMoveSweepDoesNotWaitForTheResolvePathOfAnIntentItAlreadyTookOver(t *testing.T) {
	bobShard := shard.Of("t/bob", shard.DefaultCount)
	if bobShard == actorShard {
		t.Fatal("alice and bob share a shard: pick another actor")
	}
	s := openStore(t, 16)
	bank := newDedupBank()
	var held atomic.Value // the operation id whose resolve path hangs
	held.Store("")
	holdResolve := make(chan struct{})
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(holdResolve) }) }
	upstream := func(region string) http.Handler {
		h := bank.handler(region)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/"+held.Load().(string)) {
				select {
				case <-holdResolve:
				case <-r.Context().Done():
					return
				}
			}
			h.ServeHTTP(w, r)
		})
	}
	east, west := startRegions(t, s, "east", regionsOptions{
		endpoint: "    failover: transfer\n    upstream_dedup: operation_id\n    upstream_timeout: 55s\n    lease: 60s\n",
		upstream: upstream, recovery: gateway.RecoveryConfig{Clock: clock.NewFake(time.Now())}})
	t.Cleanup(release) // before the gateways close, which wait for the held settle
	if _, err := s.Pool().Exec(context.Background(), `UPDATE shard_fences SET epoch = 1, owner_region = 'east' WHERE shard = $1`, bobShard); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*regionGW{east, west} {
		r.owners.set(bobShard, "east", 1, gateway.ShardActive)
	}
	t.Cleanup(bank.unblock)
	const body = `{"amount":"7.00"}`
	answers := make(chan int, 2)
	pay := func(actor, key string) string {
		go func() {
			resp, err := http.DefaultClient.Do(post(t, east.url+"/v1/things", token(t, actor), key, body))
			if err != nil {
				answers <- 0
				return
			}
			resp.Body.Close()
			answers <- resp.StatusCode
		}()
		select {
		case op := <-bank.reached:
			return op
		case <-time.After(10 * time.Second):
			t.Fatalf("%s's payment never reached the bank", actor)
			return ""
		}
	}
	aliceOp := pay("alice", "alice-held")
	held.Store(aliceOp)
	pay("bob", "bob-free")
	move := func(sh int) {
		t.Helper()
		if err := s.MoveFence(context.Background(), fencing.Move{Shard: sh, From: 1, To: "west", Operator: "test", Reason: "east failed"}); err != nil {
			t.Fatal(err)
		}
		for _, r := range []*regionGW{east, west} {
			r.owners.set(sh, "west", 2, gateway.ShardFailedOver)
		}
	}
	move(actorShard)
	alice := reviewScope(t, "alice", "alice-held")
	testutil.Eventually(t, 10*time.Second, func() error {
		rec, err := s.Read(context.Background(), alice)
		if err != nil || rec.Token.Epoch != 2 {
			return fmt.Errorf("west's sweep has not taken alice's payment over: epoch %d, %v", rec.Token.Epoch, err)
		}
		return nil
	})
	move(bobShard)
	bob := reviewScope(t, "bob", "bob-free")
	testutil.Eventually(t, 10*time.Second, func() error {
		rec, err := s.Read(context.Background(), bob)
		if err != nil || rec.State != idempotency.Completed {
			return fmt.Errorf("bob's payment was not settled while alice's resolve path hangs: %s, %v", rec.State, err)
		}
		return nil
	})
	if rec, err := s.Read(context.Background(), alice); err != nil || rec.State != idempotency.InProgress {
		t.Fatalf("alice's payment %s, %v; want still IN_PROGRESS, its resolve path held", rec.State, err)
	}
	release() // alice's settle ends before the gateways close
	bank.unblock()
	<-answers
	<-answers
}

// TestAZombiesLateUpstreamCallAfterAnEarlyTakeoverTakesNoEffect: the
// case the declaration exists for. East's call has reached the upstream
// but not taken effect when east's shard fails over (east is a zombie:
// paused or cut off, its lease live). West's retry takes the operation
// over at once; the resolve path says it never ran, so west runs it
// (same operation id) and answers the charge. Then the zombie's call
// lands: the upstream deduplicates it by operation id and charges
// nothing, and the fence refuses the zombie's result. One charge, and
// the record keeps west's answer.
func TestAZombiesLateUpstreamCallAfterAnEarlyTakeoverTakesNoEffect(t *testing.T) {
	s := openStore(t, 16)
	bank := newDedupBank()
	bank.lateEast = true
	idle := gateway.RecoveryConfig{Clock: clock.NewFake(time.Now())}
	east, west := startRegions(t, s, "east", regionsOptions{
		endpoint: "    failover: transfer\n    upstream_dedup: operation_id\n", upstream: bank.handler, recovery: idle})
	const body = `{"amount":"7.00"}`
	op, eastAnswer := inFlightInEast(t, s, bank, east, west, "zombie-lands-late", body)

	st, hd, b := do(t, post(t, west.url+"/v1/things", token(t, "alice"), "zombie-lands-late", body))
	if st != http.StatusCreated || hd.Get(gateway.HeaderOperationID) != op || hd.Get("Idempotent-Replayed") == "true" {
		t.Fatalf("retry at the new owner: %s; want a fresh 201 of %s", describe(st, hd, b), op)
	}
	if n := bank.total(); n != 1 {
		t.Fatalf("bank charged %d times after the new owner ran it; want 1", n)
	}
	bank.unblock() // the zombie's call lands now
	// Its result is refused by the fence; the call is handed to west,
	// which answers from its record (handoff_test.go).
	if got := <-eastAnswer; got != http.StatusCreated {
		t.Errorf("the zombie's own answer: %d; want west's 201 (its result refused by the fence, the call handed to west)", got)
	}
	if n := bank.total(); n != 1 {
		t.Errorf("bank charged %d times after the zombie's call landed; want 1", n)
	}
	st, hd, b = do(t, post(t, west.url+"/v1/things", token(t, "alice"), "zombie-lands-late", body))
	if st != http.StatusCreated || hd.Get("Idempotent-Replayed") != "true" || hd.Get(gateway.HeaderOperationID) != op {
		t.Errorf("retry after the zombie's call: %s; want the replayed 201 of %s", describe(st, hd, b), op)
	}
}

// TestARetryWaitingOnAMovedShardsInFlightIntentIsAnsweredWhenTheSweepSettlesIt:
// west's move sweep has taken the payment east left in flight over and is
// asking the resolve path when the client's retry reaches west: the retry
// finds the sweep's live claim and waits (in_progress.wait). The sweep's
// verdict, once recorded, wakes it at once, as a finish of this instance
// does: no poll of the record falls due (the gateway's clock never moves
// here). Before, the sweep's record woke nobody, and the retry waited for
// its next poll (50 ms, doubling to 1 s: up to a third of a second in the
// zombie-pause drills).
func TestARetryWaitingOnAMovedShardsInFlightIntentIsAnsweredWhenTheSweepSettlesIt(t *testing.T) {
	s := openStore(t, 16)
	bank := newDedupBank()
	resolving, resolveGate := make(chan struct{}, 1), make(chan struct{})
	sweepClk, waitClk := clock.NewFake(time.Now()), clock.NewFake(time.Now())
	east, west := startRegions(t, s, "east", regionsOptions{
		endpoint: "    failover: transfer\n    upstream_dedup: operation_id\n    in_progress: {wait: 30s}\n",
		upstream: func(region string) http.Handler {
			h := bank.handler(region)
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if region == "west" && r.Method == http.MethodGet {
					resolving <- struct{}{}
					<-resolveGate
				}
				h.ServeHTTP(w, r)
			})
		},
		recovery: gateway.RecoveryConfig{Clock: sweepClk}, clock: waitClk})
	const body = `{"amount":"7.00"}`
	op, eastAnswer := inFlightInEast(t, s, bank, east, west, "settled-while-waiting", body)
	// One sweep: west takes the operation over and asks the resolve path,
	// which holds the answer.
	testutil.Eventually(t, 10*time.Second, func() error {
		sweepClk.Advance(gateway.DefaultMoveSweepInterval)
		select {
		case <-resolving:
			return nil
		default:
			return errors.New("west's sweep has not asked the resolve path yet")
		}
	})
	retried := make(chan string, 1)
	go func() {
		st, hd, b := do(t, post(t, west.url+"/v1/things", token(t, "alice"), "settled-while-waiting", body))
		retried <- fmt.Sprintf("%d %s %s", st, hd.Get(gateway.HeaderOperationID), describe(st, hd, b))
	}()
	testutil.Eventually(t, 10*time.Second, func() error {
		if n := gateway.Waiting(west.gw); n != 1 {
			return fmt.Errorf("%d requests waiting at west; want the retry", n)
		}
		return nil
	})
	close(resolveGate)
	select {
	case got := <-retried:
		if !strings.HasPrefix(got, fmt.Sprintf("201 %s ", op)) {
			t.Errorf("retry answered %s; want the 201 of %s", got, op)
		}
	case <-time.After(10 * time.Second):
		waitClk.Advance(time.Minute) // end the wait, so the servers can close
		t.Fatalf("the retry was not answered once the sweep recorded the verdict (after its wait ran out: %s)", <-retried)
	}
	bank.unblock()
	<-eastAnswer
	if n := bank.total(); n != 1 {
		t.Errorf("bank charged %d times; want 1", n)
	}
}
