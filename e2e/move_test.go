package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/ownership"
)

// Sizes of the move-under-load test: the floors.
const (
	moveClients = 16
	moveRounds  = 20
	// moveIntentTries bounds one intent's retries (a 503 while its shard
	// is FENCING, a 409 while a moved-away attempt finishes).
	moveIntentTries = 200
	// moveDrain bounds how long a planned move waits for the old owner's
	// operations in flight (a payment takes milliseconds here).
	moveDrain = 10 * time.Second
)

// actorsOnOneShard returns n actor names that all hash to one shard.
func actorsOnOneShard(prefix string, n int) (shard int, actors []string) {
	shard = devcluster.ShardOf(prefix + "-0")
	actors = []string{prefix + "-0"}
	for i := 1; len(actors) < n; i++ {
		if name := prefix + "-" + strconv.Itoa(i); devcluster.ShardOf(name) == shard {
			actors = append(actors, name)
		}
	}
	return shard, actors
}

// intentResult is what one client saw of one intent.
type intentResult struct {
	actor, key string
	final      reply
	answers    []int // every status the intent's requests got, in order
	err        error
}

// TestShardMovingUnderLoadRunsEveryIntentOnce: 16 clients write payments
// for actors of one shard, through all three regions, while the shard is
// moved back and forth 20 times between two regions (each a planned move:
// etcd FENCING with epoch+1, the old owner's operations in flight drained,
// the SQL fence bumped, etcd ACTIVE). Every
// request is answered with a success, a replay, a 409 or a 503 with
// Retry-After; every intent ends in one success; the bank holds exactly one
// charge per intent; nothing is left in progress; etcd and the SQL fence
// agree on the final epoch.
func TestShardMovingUnderLoadRunsEveryIntentOnce(t *testing.T) {
	c := startCluster(t, devcluster.Options{})
	shard, actors := actorsOnOneShard(uniqueName("mover"), moveClients)
	home := c.Home(actors[0])
	other := c.Regions[0].Name
	if other == home {
		other = c.Regions[1].Name
	}
	dir := c.Regions[0].Daemon.Directory()
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()

	results := underLoad(t, ctx, c, actors, func() error {
		for round := 0; round < moveRounds; round++ {
			to := other
			if round%2 == 1 {
				to = home
			}
			_, err := dir.Move(ctx, shard, to, ownership.Active, "e2e", fmt.Sprintf("move %d under load", round),
				ownership.DrainFor(moveDrain))
			if err != nil {
				return fmt.Errorf("move %d to %s: %w", round, to, err)
			}
			time.Sleep(50 * time.Millisecond) // let traffic land between moves
		}
		return nil
	})
	checkOnce(t, c, results, fmt.Sprintf("over %d moves", moveRounds))
	l := ledger{t: t, c: c}

	var total, inFlight int
	l.read("bank charges of the shard's actors", func(ctx context.Context) error {
		scopes := make([]string, len(actors))
		for i, a := range actors {
			scopes[i] = scope(a)
		}
		return c.Pool.QueryRow(ctx, `SELECT count(*) FROM bank_charges WHERE actor = ANY($1)`, scopes).Scan(&total)
	})
	if total != len(results) {
		t.Errorf("bank holds %d charges for %d intents", total, len(results))
	}
	l.read("records in progress", func(ctx context.Context) error {
		return c.Pool.QueryRow(ctx, `SELECT count(*) FROM idempotency_records
			WHERE shard = $1 AND state IN ('PENDING', 'IN_PROGRESS')`, shard).Scan(&inFlight)
	})
	if inFlight != 0 {
		t.Errorf("%d records of shard %d left in progress", inFlight, shard)
	}
	e, err := dir.Get(ctx, shard)
	if err != nil {
		t.Fatal(err)
	}
	epoch, owner, err := c.Regions[0].Daemon.Store().Fence(ctx, shard)
	if err != nil {
		t.Fatal(err)
	}
	if e.Epoch != 1+moveRounds || e.State != ownership.Active || epoch != e.Epoch || owner != e.Owner {
		t.Errorf("after %d moves: etcd %v, SQL fence epoch %d owner %s; want both at epoch %d", moveRounds, e, epoch, owner, 1+moveRounds)
	}
}

// underLoad runs moveClients clients, one per actor, each sending intent
// after intent through the regions in turn until mover returns (and at
// least one intent each), and returns every intent's result.
func underLoad(t *testing.T, ctx context.Context, c *devcluster.Cluster, actors []string, mover func() error) []intentResult {
	t.Helper()
	stop := make(chan struct{})
	moved := make(chan error, 1)
	go func() {
		defer close(stop)
		moved <- mover()
	}()
	var (
		mu      sync.Mutex
		results []intentResult
		wg      sync.WaitGroup
	)
	for i, actor := range actors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok := token(t, c, actor)
			for n := 0; ; n++ {
				select {
				case <-stop:
					if n > 0 {
						return
					}
				default:
				}
				res := runIntent(ctx, c, i+n, tok, actor, fmt.Sprintf("%s-intent-%d", actor, n))
				mu.Lock()
				results = append(results, res)
				mu.Unlock()
				if res.err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := <-moved; err != nil {
		t.Fatal(err)
	}
	return results
}

// checkOnce fails the test unless every intent ended in one success with
// exactly one bank charge, and logs the answers by status.
func checkOnce(t *testing.T, c *devcluster.Cluster, results []intentResult, what string) {
	t.Helper()
	l := ledger{t: t, c: c}
	statuses := map[int]int{}
	for _, r := range results {
		for _, s := range r.answers {
			statuses[s]++
		}
		if r.err != nil {
			t.Errorf("%s %s: %v (answers %v)", r.actor, r.key, r.err, r.answers)
			continue
		}
		if n := l.charges(r.final.opID()); n != 1 {
			t.Errorf("%s %s: operation %s has %d bank charges, want 1", r.actor, r.key, r.final.opID(), n)
		}
	}
	t.Logf("%d intents %s; answers by status: %v", len(results), what, statuses)
}

// runIntent sends one intent until it gets its final answer, each try to
// the next region in turn. Only a success, a replay, a 409 or a 503 with
// Retry-After are acceptable answers on the way.
func runIntent(ctx context.Context, c *devcluster.Cluster, start int, tok, actor, key string) intentResult {
	res := intentResult{actor: actor, key: key}
	body := paymentBody("1.00", key)
	for try := 0; try < moveIntentTries; try++ {
		base := c.Regions[(start+try)%len(c.Regions)].URL
		r, err := postPayment(ctx, base, tok, key, body)
		if err != nil {
			res.err = fmt.Errorf("try %d via %s: %w", try, base, err)
			return res
		}
		res.answers = append(res.answers, r.Status)
		switch {
		case r.Status == http.StatusCreated:
			res.final = r
			return res
		case (r.Status == http.StatusConflict || r.Status == http.StatusServiceUnavailable) && r.retryAfter() > 0:
			time.Sleep(20 * time.Millisecond) // a client honouring a short hint, compressed
		default:
			res.err = fmt.Errorf("try %d via %s: unacceptable answer %v", try, base, r)
			return res
		}
	}
	res.err = fmt.Errorf("no final answer after %d tries", moveIntentTries)
	return res
}

// TestDrainAndFailbackUnderLoadRunEveryIntentOnce: 16 clients write
// payments for us-east's actors through all regions while an operator
// drains us-east (every shard it owns moves to its failover region, each
// a planned, draining move) and then fails it back home. Every request
// is answered with a success, a replay, a 409 or a 503 with Retry-After;
// every intent is charged once; nothing is left in progress; every shard
// ends home, ACTIVE, with etcd and SQL agreeing.
func TestDrainAndFailbackUnderLoadRunEveryIntentOnce(t *testing.T) {
	c := startCluster(t, devcluster.Options{})
	eu := c.Region("eu-west").Daemon
	repair := failover.Repair{Directory: eu.Directory(), Topology: daemonTopology(t, c), Audit: eu.Store(),
		DrainTimeout: moveDrain}
	actors := make([]string, moveClients)
	for i := range actors {
		actors[i] = c.ActorHomedIn("us-east", uniqueName("drain-"+strconv.Itoa(i)))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()

	results := underLoad(t, ctx, c, actors, func() error {
		time.Sleep(200 * time.Millisecond) // deliberate: traffic first (the load, not a wait for a condition)
		if _, err := repair.Drain(ctx, "us-east", "e2e", "drain under load"); err != nil {
			return fmt.Errorf("drain: %w", err)
		}
		time.Sleep(200 * time.Millisecond) // traffic while drained
		if _, err := repair.Failback(ctx, "us-east", "e2e", "failback under load"); err != nil {
			return fmt.Errorf("failback: %w", err)
		}
		time.Sleep(200 * time.Millisecond) // traffic after the failback
		return nil
	})
	checkOnce(t, c, results, "through a drain and a failback")
	l := ledger{t: t, c: c}
	var inFlight int
	l.read("records in progress", func(ctx context.Context) error {
		return c.Pool.QueryRow(ctx, `SELECT count(*) FROM idempotency_records WHERE state IN ('PENDING', 'IN_PROGRESS')`).Scan(&inFlight)
	})
	if inFlight != 0 {
		t.Errorf("%d records left in progress", inFlight)
	}
	entries, _, err := eu.Directory().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	top := daemonTopology(t, c)
	for _, e := range entries {
		epoch, owner, err := eu.Store().Fence(ctx, e.Shard)
		if err != nil {
			t.Fatal(err)
		}
		if e.Owner != top.Home(e.Shard) || e.State != ownership.Active || epoch != e.Epoch || owner != e.Owner {
			t.Errorf("shard %d after failback: etcd %v, SQL epoch %d owner %s; want home %s ACTIVE, agreeing",
				e.Shard, e, epoch, owner, top.Home(e.Shard))
			break
		}
	}
}
