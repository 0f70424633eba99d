package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/idemcoord/idemcoord/demo/bank"
	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/internal/testutil"
	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/region"
)

// failoverDeadline bounds one failover, from the kill to the first
// success in the new owner: the goal is a p99 of 5 s with the default
// timings (liveness TTL 2 s, confirmation 500 ms); the bound is loose so
// a loaded machine does not fail the test on time alone.
const failoverDeadline = 30 * time.Second

// e2eHoldTime is how long a returning region stays recovering in the
// e2e clusters (startCluster's default).
const e2eHoldTime = 500 * time.Millisecond

// failoverRuns is how many kill/failover/failback rounds the transfer test
// makes: IDEMCOORD_FAILOVER_RUNS, default 1 (a p50/p99 wants 20 or more).
func failoverRuns(t *testing.T) int {
	if v := os.Getenv("IDEMCOORD_FAILOVER_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("IDEMCOORD_FAILOVER_RUNS=%q: want a positive number", v)
		}
		return n
	}
	return 1
}

// regionProcess replaces the dev cluster's in-process us-east by a real
// idemd process on the same address, so the region can be SIGKILLed. The
// swap is a restart of a one-instance region: stopping the in-process
// region hands it over at once (a clean shutdown), so once the process is
// up its home shards are failed back to it.
func regionProcess(t *testing.T, c *devcluster.Cluster, worker, policy string) *idemdProc {
	t.Helper()
	return regionProcessWith(t, c, worker, procOptions{failover: policy})
}

// regionProcessWith is regionProcess with more of the process's options
// (its listen address is us-east's).
func regionProcessWith(t *testing.T, c *devcluster.Cluster, worker string, po procOptions) *idemdProc {
	t.Helper()
	idemdBinary(t) // built before the region goes down
	us := c.Region("us-east")
	if err := c.StopRegion(t.Context(), us.Name); err != nil {
		t.Fatal(err)
	}
	po.listen = strings.TrimPrefix(us.URL, "http://")
	p := startIdemdWith(t, c, worker, po)
	failBack(t, c, us.Name)
	return p
}

// kill SIGKILLs p and waits for it to die.
func kill(t *testing.T, p *idemdProc) {
	t.Helper()
	p.signal(syscall.SIGKILL)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		t.Fatal("idemd did not die within 5 s of SIGKILL")
	}
}

// inFlight starts a payment in p and kills p once the bank recorded its
// charge, leaving the operation IN_PROGRESS under p's lease. It returns
// the operation id, when the kill happened and the dead worker's record
// as the kill left it.
func inFlight(t *testing.T, c *devcluster.Cluster, p *idemdProc, tok, actor, key string, body []byte) (string, time.Time, storedRecord) {
	t.Helper()
	if err := c.Bank.SetFaults(bank.Faults{DelayAfter: procBankDelay}); err != nil {
		t.Fatal(err)
	}
	orig := postAsync(t, p.URL, tok, key, body)
	opID := waitOperationOf(t, c, "bank charge", `SELECT operation_id FROM bank_charges WHERE actor = $1`, scope(actor), 10*time.Second)
	kill(t, p)
	killed := time.Now()
	if err := c.Bank.SetFaults(bank.Faults{}); err != nil {
		t.Fatal(err)
	}
	rec := readRecord(t, c, opID)
	if rec.State != "IN_PROGRESS" {
		t.Fatalf("record after the kill: %+v; want IN_PROGRESS", rec)
	}
	orig.wait(t, 5*time.Second)
	return opID, killed, rec
}

// TestRegionKilledFailsOverTransferEndpointsServe: the only idemd of
// us-east (a real process) is killed while a payment is in flight there.
// Within the liveness timing the elected controller moves us-east's
// shards to eu-west (FAILED_OVER, one epoch step, audited); a new intent
// of a us-east actor is then served by eu-west (transfer policy), and the
// retry of the in-flight intent is answered from the resolve path once
// the dead worker's lease expired, with one charge in the bank. Each round
// brings the region back and fails it back; the time from the kill to the
// first success in the new owner is logged per round, with p50 and p99.
func TestRegionKilledFailsOverTransferEndpointsServe(t *testing.T) {
	c := startCluster(t, devcluster.Options{Failover: "transfer", UpstreamTimeout: 5 * time.Second,
		BankTimeout: 5 * time.Second, FailoverTimings: failover.Config{HoldTime: 500 * time.Millisecond}})
	eu := c.Region("eu-west")
	l := ledger{t, c}
	var times []time.Duration
	p := regionProcess(t, c, "fo-us-0", "transfer")
	for run := 0; run < failoverRuns(t); run++ {
		// A fresh actor each round: the bank's charges are found by actor.
		actor := c.ActorHomedIn("us-east", uniqueName("fo-transfer"))
		tok := token(t, c, actor)
		key := uniqueName("fo-inflight")
		body := paymentBody("7.00", key)
		opID, killed, held := inFlight(t, c, p, tok, actor, key, body)

		// New intents through eu-west until one succeeds there.
		var served reply
		testutil.EventuallyEvery(t, time.Until(killed.Add(failoverDeadline)), 100*time.Millisecond, func() error {
			r := mustPost(t, eu.URL, tok, uniqueName("fo-new"), paymentBody("1.00", "new"))
			if r.Status == http.StatusCreated {
				served = r
				return nil
			}
			if r.Status != http.StatusServiceUnavailable || r.retryAfter() == 0 {
				t.Fatalf("run %d: while failing over: %v; want 503 with Retry-After", run, r)
			}
			return fmt.Errorf("run %d: no success in the new owner after the kill: %v", run, r)
		})
		took := time.Since(killed)
		times = append(times, took)
		if got := served.Header.Get("X-Idempotency-Region"); got != "eu-west" {
			t.Errorf("run %d: new intent served by %q; want eu-west", run, got)
		}
		t.Logf("run %d: failover from the kill to the first success in eu-west: %v", run, took.Round(time.Millisecond))
		failedOnProbe(t, c, run)

		// The in-flight intent: 409 while the dead lease lives, then the
		// takeover asks the resolve path; one charge.
		final, _ := takeoverRetries(t, c, eu.URL, tok, key, body, opID, held)
		if final.Status != http.StatusCreated || final.opID() != opID {
			t.Errorf("run %d: in-flight intent's retry: %v; want 201 of operation %s", run, final, opID)
		}
		l.exactlyOnce("after the failover", opID)

		// Bring us-east back and fail it back for the next round.
		if run+1 < failoverRuns(t) {
			p = regionProcess(t, c, "fo-us-"+strconv.Itoa(run+1), "transfer")
			failBack(t, c, "us-east")
		}
	}
	if len(times) > 1 {
		slices.Sort(times)
		p99 := times[min(len(times)-1, (len(times)*99+99)/100-1)]
		t.Logf("failover over %d runs: p50 %v, p99 %v, max %v", len(times), times[len(times)/2].Round(time.Millisecond),
			p99.Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond))
	}
}

// failedOnProbe fails the test unless the latest region failover in the
// audit is us-east's on the down probe's evidence: a SIGKILLed idemd
// holds no socket, so the survivors' probe of its peer URL is refused and
// the confirmation delay is skipped (failover.Prober).
func failedOnProbe(t *testing.T, c *devcluster.Cluster, run int) {
	t.Helper()
	testutil.Eventually(t, failoverDeadline, func() error {
		log, err := c.Region("eu-west").Daemon.Store().AuditLog(t.Context(), 50)
		if err != nil {
			return err
		}
		for _, e := range log {
			if e.Action != "region_failover" {
				continue
			}
			if !strings.Contains(e.Reason, "region us-east failed") || !strings.Contains(e.Reason, "nothing serves at its address") {
				t.Fatalf("run %d: latest region failover audited %q; want us-east's, failed on the down probe", run, e.Reason)
			}
			return nil
		}
		return errors.New("no region_failover audited yet")
	})
}

// failBack waits until region is healthy again in every controller's view
// and moves its shards home.
func failBack(t *testing.T, c *devcluster.Cluster, region string) {
	t.Helper()
	d := c.Region("eu-west").Daemon
	testutil.Eventually(t, failoverDeadline, func() error {
		if st := d.Failover().Tracker().State(region); st != failover.Healthy {
			return fmt.Errorf("%s not healthy again: %s", region, st)
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(t.Context(), failoverDeadline)
	defer cancel()
	r := failover.Repair{Directory: d.Directory(), Topology: daemonTopology(t, c), Audit: d.Store(),
		DrainTimeout: time.Second}
	// A failover of the region may still be moving its shards (a clean
	// stop hands it over at once): a shard it moves under the failback is
	// a conflict, and the next pass reads it again. A fence that disagrees
	// with etcd (ErrFenceDiverged, which also matches ErrMoveConflict)
	// never settles by retrying: it fails the test at once.
	testutil.EventuallyEvery(t, failoverDeadline, 100*time.Millisecond, func() error {
		_, err := r.Failback(ctx, region, "e2e", "region back")
		if err != nil && (!errors.Is(err, fencing.ErrMoveConflict) || errors.Is(err, ownership.ErrFenceDiverged)) {
			t.Fatalf("failback %s: %v", region, err)
		}
		return err
	})
}

// TestRegionKilledRejectEndpointsRefuseUntilAccepted: the same failure on
// an endpoint with the reject policy. Once the shards failed over, every
// request for the dead region's actors gets 503 + Retry-After with
// problem type region-failover naming the shard's state; nothing reaches
// the upstream and the dead region's in-flight operation stays as it was.
// After an operator accepts the new owner (audited) they are served, with
// one charge for the in-flight intent.
func TestRegionKilledRejectEndpointsRefuseUntilAccepted(t *testing.T) {
	c := startCluster(t, devcluster.Options{UpstreamTimeout: 5 * time.Second, BankTimeout: 5 * time.Second})
	actor := c.ActorHomedIn("us-east", uniqueName("fo-reject"))
	tok := token(t, c, actor)
	eu := c.Region("eu-west")
	l := ledger{t, c}
	p := regionProcess(t, c, "fo-us-reject", "reject")
	key := uniqueName("fo-inflight")
	body := paymentBody("9.00", key)
	opID, killed, _ := inFlight(t, c, p, tok, actor, key, body)
	before := readRecord(t, c, opID)

	refusals := 0
	testutil.EventuallyEvery(t, time.Until(killed.Add(failoverDeadline)), 100*time.Millisecond, func() error {
		r := mustPost(t, eu.URL, tok, uniqueName("fo-new"), paymentBody("1.00", "new"))
		if r.Status != http.StatusServiceUnavailable || r.retryAfter() == 0 {
			t.Fatalf("reject endpoint after the kill: %v; want 503 with Retry-After", r)
		}
		if strings.Contains(r.problem(t).Type, "region-failover") && strings.Contains(string(r.Body), "FAILED_OVER") {
			refusals++
		}
		if refusals < 3 {
			return fmt.Errorf("%d region-failover refusals after the kill, want 3; last %v", refusals, r)
		}
		return nil
	})
	// Past the dead worker's lease too (by the database's clock): still
	// refused, still untouched.
	expireLease(t, c, opID)
	expired := readRecord(t, c, opID)
	if expired.LeaseLeft > 0 {
		t.Fatalf("the dead worker's lease still has %v", expired.LeaseLeft)
	}
	if r := mustPost(t, eu.URL, tok, key, body); r.Status != http.StatusServiceUnavailable {
		t.Errorf("retry of the in-flight intent on a failed-over reject endpoint: %v; want 503", r)
	}
	if after := readRecord(t, c, opID); after.State != before.State || after.LeaseOwner != before.LeaseOwner {
		t.Errorf("the dead region's in-flight operation changed: %+v -> %+v", before, after)
	}
	if rows, charges := l.byActor(scope(actor)); rows != 1 || charges != 1 {
		t.Errorf("actor has %d payments and %d charges during the refusal; want only the in-flight one", rows, charges)
	}

	d := eu.Daemon
	shard := devcluster.ShardOf(actor)
	r := failover.Repair{Client: etcdClient(t, c), Directory: d.Directory(), Topology: daemonTopology(t, c), Audit: d.Store()}
	ctx, cancel := context.WithTimeout(t.Context(), failoverDeadline)
	defer cancel()
	if _, err := r.Accept(ctx, failover.ShardSelection(shard), "e2e", "reconciled the in-flight payment"); err != nil {
		t.Fatalf("accept: %v", err)
	}
	testutil.EventuallyEvery(t, failoverDeadline, 100*time.Millisecond, func() error {
		if r := mustPost(t, eu.URL, tok, uniqueName("fo-after"), paymentBody("1.00", "after")); r.Status != http.StatusCreated {
			return fmt.Errorf("not served after accept: %v", r)
		}
		return nil
	})
	final, _ := takeoverRetries(t, c, eu.URL, tok, key, body, opID, expired)
	if final.Status != http.StatusCreated || final.opID() != opID {
		t.Errorf("in-flight intent after accept: %v; want 201 of operation %s", final, opID)
	}
	l.exactlyOnce("after accept", opID)
}

// daemonTopology is the cluster's region topology.
func daemonTopology(t *testing.T, c *devcluster.Cluster) *region.Topology {
	t.Helper()
	top, err := region.New("us-east", c.Topology)
	if err != nil {
		t.Fatal(err)
	}
	return top
}

// etcdClient connects to the cluster's etcd, closed when the test ends.
func etcdClient(t *testing.T, c *devcluster.Cluster) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Etcd.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// Zombie drill timings. The zombie must still be waiting for its
// payment's answer when it is paused, however slowly the test gets to the
// SIGSTOP: the bank sits on the recorded charge for zombieBankDelay (the
// window for the pause, measured from the charge), within the payments
// service's bank timeout, and the zombie's own upstream timeout (and its
// lease, which must be longer) outlasts both. (With a 1.5 s upstream
// timeout a loaded machine paused it after its call had timed out and
// its OUTCOME_UNKNOWN was recorded, legitimately, under its epoch: it
// then had nothing left to write.)
const (
	zombieBankDelay       = 5 * time.Second
	zombieBankTimeout     = 3 * zombieBankDelay
	zombieUpstreamTimeout = 30 * time.Second
	zombieLease           = 2 * zombieUpstreamTimeout
)

// TestZombieRegionResumedAfterFailoverWritesNothing: us-east's only idemd
// is paused (SIGSTOP) with a payment at the upstream, past the failover:
// its shards move to eu-west under a new epoch and eu-west takes the
// operation over through the resolve path. When the zombie resumes
// (SIGCONT) it records its answer: the fence refuses the write (counted on
// its own /metrics as op "finish"), the record stays as eu-west completed
// it, the zombie's client is told to retry for the owner's answer, and the
// bank holds one charge.
func TestZombieRegionResumedAfterFailoverWritesNothing(t *testing.T) {
	c := startCluster(t, devcluster.Options{Failover: "transfer", UpstreamTimeout: 5 * time.Second,
		BankTimeout: zombieBankTimeout, FailoverTimings: failover.Config{HoldTime: 500 * time.Millisecond}})
	actor := c.ActorHomedIn("us-east", uniqueName("zombie"))
	tok := token(t, c, actor)
	eu := c.Region("eu-west")
	l := ledger{t, c}
	p := regionProcessWith(t, c, "fo-zombie", procOptions{failover: "transfer",
		lease: zombieLease, upstreamTimeout: zombieUpstreamTimeout})
	key := uniqueName("zombie-key")
	body := paymentBody("3.00", key)
	fenced0 := scrape(t, p.URL).sum("idemcoord_fenced_writes_rejected_total", `op="finish"`)

	if err := c.Bank.SetFaults(bank.Faults{DelayAfter: zombieBankDelay}); err != nil {
		t.Fatal(err)
	}
	// Its client waits through the failover (requestTimeout may not).
	orig := postAsyncWithin(t, failoverDeadline+zombieUpstreamTimeout, p.URL, tok, key, body)
	opID := waitOperationOf(t, c, "bank charge", `SELECT operation_id FROM bank_charges WHERE actor = $1`, scope(actor), 10*time.Second)
	p.signal(syscall.SIGSTOP)
	paused := time.Now()
	p.waitProcState("T")
	if err := c.Bank.SetFaults(bank.Faults{}); err != nil {
		t.Fatal(err)
	}
	// The drill's premise: paused mid-run, its result not recorded.
	if rec := readRecord(t, c, opID); rec.State != "IN_PROGRESS" || !strings.HasPrefix(rec.LeaseOwner, p.worker+"/") {
		t.Fatalf("record while paused: %+v; want IN_PROGRESS under %s's lease (paused too late?)", rec, p.worker)
	}
	// A paused worker's lease passes without it noticing: end it by the
	// database's clock rather than wait.
	expireLease(t, c, opID)
	// The failover and the takeover happen while the zombie sleeps.
	testutil.EventuallyEvery(t, time.Until(paused.Add(failoverDeadline)), 100*time.Millisecond, func() error {
		r := mustPost(t, eu.URL, tok, key, body)
		if r.Status == http.StatusCreated {
			if r.opID() != opID {
				t.Fatalf("taken over answer names operation %s; want %s", r.opID(), opID)
			}
			return nil
		}
		// 504: forwarded to the paused owner before the failover, the
		// answer never came (the zombie reads it when it resumes, and its
		// fence refuses it too).
		switch r.Status {
		case http.StatusServiceUnavailable, http.StatusConflict, http.StatusGatewayTimeout:
		default:
			t.Fatalf("while the owner is paused: %v; want 503, 409 or 504", r)
		}
		return fmt.Errorf("no failover and takeover since the pause: %v", r)
	})
	t.Logf("operation %s taken over by eu-west %v after the pause", opID, time.Since(paused).Round(time.Millisecond))
	taken := readRecord(t, c, opID)
	if taken.State != "COMPLETED" || strings.HasPrefix(taken.LeaseOwner, p.worker+"/") {
		t.Fatalf("record after the takeover: %+v; want COMPLETED by eu-west", taken)
	}

	p.signal(syscall.SIGCONT)
	// The zombie answers its client once its Finish was refused.
	late, err := orig.wait(t, zombieUpstreamTimeout)
	if err != nil {
		t.Fatalf("the resumed zombie's client: %v; want an answer", err)
	}
	if late.Status != http.StatusServiceUnavailable || !strings.HasSuffix(late.problem(t).Type, "/ownership-moving") ||
		late.problem(t).OperationID != opID {
		t.Errorf("the resumed zombie answered %v; want 503 ownership-moving for operation %s (retry for the owner's answer)", late, opID)
	}
	if n := scrape(t, p.URL).sum("idemcoord_fenced_writes_rejected_total", `op="finish"`); n < fenced0+1 {
		t.Errorf(`the zombie's idemcoord_fenced_writes_rejected_total{op="finish"} is %v (%v before the payment); want its late result refused by the fence`, n, fenced0)
	}
	l.exactlyOnce("after the zombie resumed", opID)
	if rec := readRecord(t, c, opID); rec.State != taken.State || rec.Version != taken.Version || rec.LeaseOwner != taken.LeaseOwner {
		t.Errorf("record after the zombie resumed: %+v; want it as eu-west completed it: %+v", rec, taken)
	}
}

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
