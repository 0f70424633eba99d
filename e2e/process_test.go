//go:build linux

// The drills in this file run one gateway instance as a real `idemd run`
// process next to a dev cluster, so that it can die the way processes die:
// SIGKILL (no deferred code, no shutdown, sockets reset by the kernel) and
// SIGSTOP (a stop-the-world pause the process does not see: a long GC, a
// frozen VM, a throttled container). Linux only: the child gets
// Pdeathsig, so a test binary that is itself killed leaves no idemd behind.

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/demo/bank"
	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/internal/testutil"
)

// Process drill settings. The process's lease is short so that a takeover
// comes within the test's budget; the in-process regions keep the dev
// cluster's 30 s lease (their own claims are never the ones taken over).
//
// procBankDelay is how long the bank sits on a recorded charge before
// answering: the window in which the drill kills or stops the process
// once it sees the charge, shorter than procUpstreamTimeout (itself
// shorter than the lease, as idemd requires), so the process is
// mid-request, not recording the answer or an unknown outcome. A loaded
// machine takes well over a second from the send to the kill at times:
// with 1 s and 1.5 s a drill stopped a process whose call had ended.
const (
	procLease           = 5 * time.Second
	procUpstreamTimeout = 4 * time.Second
	procBankDelay       = 3 * time.Second
	// procStartTimeout bounds an idemd process's start (store, etcd, listen).
	procStartTimeout = 30 * time.Second
)

// idemdBinary returns the path of the normal build of idemd (shared and
// cached: testutil.Idemd).
func idemdBinary(t *testing.T) string { return testutil.Idemd(t, "") }

// idemdDrillBinary returns the path of the drill build of idemd.
func idemdDrillBinary(t *testing.T) string { return testutil.Idemd(t, "drill") }

// idemdProc is one running `idemd run` process.
type idemdProc struct {
	t       *testing.T
	cmd     *exec.Cmd
	worker  string
	logs    *testutil.LogBuffer
	URL     string
	exited  chan struct{} // closed when Wait returned
	waitErr error         // Wait's result, once exited is closed
}

// procConfig renders the process's idemd.yaml: the dev cluster's
// create-payment endpoint (same name, fingerprint and resolve path, so the
// process and the in-process regions share operations) with a short lease.
// Values are JSON strings, which YAML reads as double-quoted scalars.
func procConfig(c *devcluster.Cluster, worker, secretFile string, po procOptions) []byte {
	if po.listen == "" {
		po.listen = "127.0.0.1:0"
	}
	if po.failover == "" {
		po.failover = "reject"
	}
	if po.upstreamTimeout == 0 {
		po.upstreamTimeout = procUpstreamTimeout
	}
	if po.lease == 0 {
		po.lease = procLease
	}
	q := func(s string) string {
		b, _ := json.Marshal(s)
		return string(b)
	}
	etcd, _ := json.Marshal(c.Etcd.Endpoints())
	// The cluster's regions list (JSON is YAML): the same topology, so the
	// process routes exactly as the in-process regions do.
	type reg struct {
		Name string `json:"name"`
		URL  string `json:"url"`
	}
	var regs []reg
	for _, r := range c.Topology {
		regs = append(regs, reg{r.Name, r.URL})
	}
	regions, _ := json.Marshal(regs)
	return fmt.Appendf(nil, `region: us-east
listen: %s
worker_id: %s
upstream: %s
store:
  dsn: %s
  max_conns: 8
etcd:
  endpoints: %s
regions: %s
auth:
  issuer: %s
  audience: %s
  hs256_secret_file: %s
defaults:
  ttl: 24h
  lease: 30s
  upstream_timeout: 10s
endpoints:
  - name: create-payment
    method: POST
    path: /v1/payments
    key: required
    lease: %s
    upstream_timeout: %s
    fingerprint:
      exclude: [/client_timestamp]
    retry_statuses: [408, 409, 425, 429, 500, 502-504]
    response_headers: [Content-Type, Location]
    failover: %s
    resolve_path: /internal/operations/{operation_id}
`, q(po.listen), q(worker), q(c.PaymentsURL), q(c.DSN), etcd, regions, q(devcluster.Issuer), q(devcluster.Audience), q(secretFile),
		po.lease, po.upstreamTimeout, po.failover)
}

// startIdemd starts `idemd run` as one more us-east instance of c, named
// worker in lease owners, and waits until it is ready. The process is
// killed (SIGKILL, which also ends a stopped process) when the test ends,
// however it ends.
func startIdemd(t *testing.T, c *devcluster.Cluster, worker string) *idemdProc {
	t.Helper()
	return startIdemdWith(t, c, worker, procOptions{})
}

// procOptions change a process's configuration: its listen address
// (default a free port), the endpoint's failover policy (default reject,
// as the dev cluster's), lease (default procLease) and upstream timeout
// (default procUpstreamTimeout; idemd wants it shorter than the lease);
// and how it runs: the binary (default idemdBinary's), environment added
// to the test's, and an edit of the rendered configuration.
type procOptions struct {
	listen, failover string
	lease            time.Duration
	upstreamTimeout  time.Duration
	bin              string
	env              []string
	editConfig       func([]byte) []byte
}

// startIdemdWith is startIdemd with options.
func startIdemdWith(t *testing.T, c *devcluster.Cluster, worker string, po procOptions) *idemdProc {
	t.Helper()
	bin := po.bin
	if bin == "" {
		bin = idemdBinary(t)
	}
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "hs256.secret")
	// The dev cluster's HS256 secret is the hex text itself.
	if err := os.WriteFile(secretFile, []byte(c.State().Secret), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "idemd.yaml")
	cfgText := procConfig(c, worker, secretFile, po)
	if po.editConfig != nil {
		cfgText = po.editConfig(cfgText)
	}
	if err := os.WriteFile(cfgFile, cfgText, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &idemdProc{t: t, worker: worker, logs: &testutil.LogBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.CommandContext(ctx, bin, "run", "--config", cfgFile, "--log-format", "json")
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if po.env != nil {
		p.cmd.Env = append(os.Environ(), po.env...)
	}
	p.cmd.WaitDelay = 5 * time.Second
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	if err := p.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting idemd: %v", err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		cancel() // SIGKILL unless it already exited
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			t.Errorf("idemd pid %d did not exit after SIGKILL", p.cmd.Process.Pid)
		}
		if t.Failed() {
			t.Logf("idemd %s (pid %d) log:\n%s", worker, p.cmd.Process.Pid, p.logTail(60))
		}
	})

	// The listen port is 0: the address comes from the "region serving" line.
	deadline := time.Now().Add(procStartTimeout)
	for p.URL == "" {
		select {
		case <-p.exited:
			t.Fatalf("idemd exited during start (%v):\n%s", p.waitErr, p.logTail(40))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("idemd did not log its address within %v:\n%s", procStartTimeout, p.logTail(40))
		}
		for _, line := range p.logLines() {
			var l struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal(line, &l) == nil && l.Msg == "region serving" && l.Addr != "" {
				p.URL = "http://" + l.Addr
			}
		}
	}
	if err := testutil.PollEvery(time.Until(deadline), 50*time.Millisecond, func() error {
		rctx, rcancel := context.WithTimeout(t.Context(), 2*time.Second)
		r, err := send(rctx, http.MethodGet, p.URL+"/readyz", "", nil, nil)
		rcancel()
		if err == nil && r.Status != http.StatusOK {
			err = fmt.Errorf("/readyz: %v", r)
		}
		return err
	}); err != nil {
		t.Fatalf("idemd at %s not ready: %v\n%s", p.URL, err, p.logTail(40))
	}
	t.Logf("idemd %s (pid %d) ready at %s in %v", worker, p.cmd.Process.Pid, p.URL, time.Since(start).Round(time.Millisecond))
	return p
}

// logLines returns the process's log, one JSON object per line.
func (p *idemdProc) logLines() [][]byte {
	return bytes.Split(bytes.TrimSpace(p.logs.Bytes()), []byte("\n"))
}

// logTail returns the last n lines of the process's log.
func (p *idemdProc) logTail(n int) string {
	lines := p.logLines()
	return string(bytes.Join(lines[max(0, len(lines)-n):], []byte("\n")))
}

// signal sends sig to the process, failing the test if it cannot.
func (p *idemdProc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("sending %v to idemd pid %d: %v", sig, p.cmd.Process.Pid, err)
	}
}

// procState is the process's state letter in /proc/<pid>/stat: R, S, T
// (stopped), Z (zombie), ...
func (p *idemdProc) procState() string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return "?"
	}
	// "pid (comm) state ...": comm may contain spaces and parentheses.
	i := bytes.LastIndex(b, []byte(") "))
	if i < 0 || i+2 >= len(b) {
		return "?"
	}
	return string(b[i+2 : i+3])
}

// waitProcState polls until the process is in state want (bounded).
func (p *idemdProc) waitProcState(want string) {
	p.t.Helper()
	var got string
	if testutil.PollEvery(time.Second, 10*time.Millisecond, testutil.Cond(func() bool {
		got = p.procState()
		return got == want
	})) != nil {
		p.t.Fatalf("idemd pid %d in state %q; want %q", p.cmd.Process.Pid, got, want)
	}
}

// asyncPost is a request whose answer arrives on a channel.
type asyncPost struct {
	done  chan struct{}
	reply reply
	err   error
}

// postAsync POSTs a payment in the background, within requestTimeout.
func postAsync(t *testing.T, base, token, key string, body []byte) *asyncPost {
	return postAsyncWithin(t, requestTimeout, base, token, key, body)
}

// postAsyncWithin is postAsync with the client's own timeout d: for an
// answer that comes only after a drill's failover.
func postAsyncWithin(t *testing.T, d time.Duration, base, token, key string, body []byte) *asyncPost {
	a := &asyncPost{done: make(chan struct{})}
	ctx, cancel := context.WithTimeout(t.Context(), d)
	go func() {
		defer close(a.done)
		defer cancel()
		a.reply, a.err = postPayment(ctx, base, token, key, body)
	}()
	return a
}

// wait waits up to d for the answer.
func (a *asyncPost) wait(t *testing.T, d time.Duration) (reply, error) {
	t.Helper()
	select {
	case <-a.done:
		return a.reply, a.err
	case <-time.After(d):
		t.Fatalf("no answer (nor error) within %v", d)
		return reply{}, nil
	}
}

// waitOperationOf polls query (one text column, one actor argument) until
// it finds a row, and returns the operation id it names. Polled every
// 10 ms: the drills act on it within a one-second window.
func waitOperationOf(t *testing.T, c *devcluster.Cluster, what, query, actor string, within time.Duration) string {
	t.Helper()
	var op string
	if testutil.PollEvery(within, 10*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		err := c.Pool.QueryRow(ctx, query, actor).Scan(&op)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			t.Logf("polling for %s: %v", what, err)
		}
		return err
	}) != nil {
		t.Fatalf("no %s for %s within %v", what, actor, within)
	}
	return op
}

// storedRecord is the idempotency record as the store holds it.
type storedRecord struct {
	State      string
	LeaseOwner string
	Attempts   int
	Version    int64
	// LeaseLeft is lease_expires_at minus the database's now() (zero once
	// the operation finished).
	LeaseLeft time.Duration
	// LeaseExpires is lease_expires_at, on the database's clock (zero
	// once the operation finished).
	LeaseExpires time.Time
}

// leaseEnd estimates when rec's lease ends on the test's clock: for
// deadlines and logs only (the store decides by the database's clock).
func leaseEnd(t *testing.T, c *devcluster.Cluster, rec storedRecord) time.Time {
	t.Helper()
	return time.Now().Add(rec.LeaseExpires.Sub(dbNow(t, c)))
}

// readRecord reads operation opID's record straight from the store.
func readRecord(t *testing.T, c *devcluster.Cluster, opID string) storedRecord {
	t.Helper()
	var rec storedRecord
	var (
		leftMs  float64
		expires *time.Time
	)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	err := c.Pool.QueryRow(ctx, `SELECT state, lease_owner, attempts, version,
		COALESCE(EXTRACT(EPOCH FROM (lease_expires_at - now())) * 1000, 0)::FLOAT8, lease_expires_at
		FROM idempotency_records WHERE operation_id = $1::UUID`, opID).
		Scan(&rec.State, &rec.LeaseOwner, &rec.Attempts, &rec.Version, &leftMs, &expires)
	if err != nil {
		t.Fatalf("reading the record of operation %s: %v", opID, err)
	}
	rec.LeaseLeft = time.Duration(leftMs * float64(time.Millisecond))
	if expires != nil {
		rec.LeaseExpires = *expires
	}
	return rec
}

// dbNow is the database's now(): the clock the store decides leases by.
func dbNow(t *testing.T, c *devcluster.Cluster) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	var now time.Time
	if err := c.Pool.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
		t.Fatalf("reading the database's clock: %v", err)
	}
	return now
}

// expireLease ends operation opID's lease now, by the database's clock:
// what waiting out the lease of a worker that is dead (and so writes
// nothing more) would do, without the wait.
func expireLease(t *testing.T, c *devcluster.Cluster, opID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	tag, err := c.Pool.Exec(ctx, `UPDATE idempotency_records SET lease_expires_at = now()
		WHERE operation_id = $1::UUID AND lease_expires_at > now()`, opID)
	if err != nil {
		t.Fatalf("expiring the lease of operation %s: %v", opID, err)
	}
	t.Logf("lease of %s expired by the test (%d row)", opID, tag.RowsAffected())
}

// takeoverRetries retries key+body through base until it answers 201,
// every 200 ms, bounded. Each answer before that must be the contract's
// 409 for operation opID in progress; a 201 must not come before held's
// lease (held is the record of the dead or stopped holder) expired by the
// database's clock, which the takeover's claim decides by: the
// database's now() read after the 201 came is at least the claim's. (A
// request sent just before the expiry is claimed just after it; the
// send time on the test's clock, with a tolerance, flaked under load.)
// It returns the 201 and how many 409s came first.
func takeoverRetries(t *testing.T, c *devcluster.Cluster, base, tok, key string, body []byte, opID string, held storedRecord) (final reply, conflicts int) {
	t.Helper()
	end := leaseEnd(t, c, held)
	deadline := later(end, time.Now()).Add(10 * time.Second)
	i := 0
	err := testutil.PollEvery(time.Until(deadline), 200*time.Millisecond, func() error {
		defer func() { i++ }()
		r := mustPost(t, base, tok, key, body)
		switch r.Status {
		case http.StatusConflict:
			p := r.problem(t)
			if !strings.HasSuffix(p.Type, "/in-progress") || p.OperationID != opID ||
				p.OperationState != "IN_PROGRESS" || p.NewKeySafe {
				t.Errorf("retry %d: 409 problem %+v; want in-progress, operation %s, IN_PROGRESS, new_key_safe false", i, p, opID)
			}
			if r.retryAfter() < 1 {
				t.Errorf("retry %d: 409 Retry-After %q; want whole seconds >= 1", i, r.Header.Get("Retry-After"))
			}
			conflicts++
			return fmt.Errorf("retry %d: 409, still in progress", i)
		case http.StatusCreated:
			if now := dbNow(t, c); now.Before(held.LeaseExpires) {
				t.Errorf("retry %d taken over %v before the holder's lease expired (by the database's clock)",
					i, held.LeaseExpires.Sub(now).Round(time.Millisecond))
			}
			t.Logf("retry %d: 201 after %d x 409, %v after the lease expired", i, conflicts,
				time.Since(end).Round(time.Millisecond))
			final = r
			return nil
		}
		t.Fatalf("retry %d: %v; want 409 while the lease is held, then 201", i, r)
		return nil
	})
	if err != nil {
		t.Fatalf("no 201 within 10 s of the lease's expiry (%d x 409)", conflicts)
	}
	return final, conflicts
}

// TestGatewayProcessKilledMidRequest kills (SIGKILL) a real idemd process
// after the bank recorded the charge of the payment it is proxying, before
// the answer came back: the worker dies mid-run with its lease held and
// nothing recorded ("Leases and recovery"). A retry in another region is
// refused with 409 while the dead worker's 5 s lease lasts (it is never
// taken over early), then takes the operation over — same operation id —
// asks the payments service's resolve endpoint instead of running again,
// and answers the original payment as a replay (201, Idempotent-Replayed).
// The bank has one charge and payments one row for the operation and the
// actor (I1, I2), and the operation is COMPLETED with two attempts.
func TestGatewayProcessKilledMidRequest(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	c := startCluster(t, devcluster.Options{UpstreamTimeout: 5 * time.Second, BankTimeout: 5 * time.Second})
	proc := startIdemd(t, c, "e2e-proc-killed")
	actor := c.ActorHomedIn("us-east", uniqueName("proc-killed"))
	tok := token(t, c, actor)
	key := uniqueName("proc-killed-key")
	body := paymentBody("41.00", "order-proc-killed")
	region := c.Regions[1]
	l := ledger{t, c}
	takeovers0 := sumMetric(t, c, metricDecisions, `decision="takeover"`)

	if err := c.Bank.SetFaults(bank.Faults{DelayAfter: procBankDelay}); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	orig := postAsync(t, proc.URL, tok, key, body)
	opID := waitOperationOf(t, c, "bank charge", `SELECT operation_id FROM bank_charges WHERE actor = $1`, scope(actor), 10*time.Second)
	proc.signal(syscall.SIGKILL)
	select {
	case <-proc.exited:
	case <-time.After(5 * time.Second):
		t.Fatal("idemd did not die within 5 s of SIGKILL")
	}
	t.Logf("killed idemd %v after sending; bank charge for operation %s recorded", time.Since(sent).Round(time.Millisecond), opID)
	if err := c.Bank.SetFaults(bank.Faults{}); err != nil {
		t.Fatal(err)
	}

	// It died holding the operation: in progress, its lease, nothing stored.
	rec := readRecord(t, c, opID)
	t.Logf("record after the kill: %+v", rec)
	if rec.State != "IN_PROGRESS" || !strings.HasPrefix(rec.LeaseOwner, proc.worker+"/") || rec.LeaseLeft <= 0 {
		t.Fatalf("record after the kill: %+v; want IN_PROGRESS under %s's live lease (killed too late?)", rec, proc.worker)
	}
	// Go's client sends a POST carrying an Idempotency-Key again on a new
	// connection when its kept-alive one breaks: the error it ends with is
	// usually that second attempt's "connection refused".
	if r, err := orig.wait(t, 5*time.Second); err == nil {
		t.Errorf("the killed process's client got an answer: %v; want a broken connection", r)
	} else {
		t.Logf("the killed process's client: %v", err)
	}

	final, conflicts := takeoverRetries(t, c, region.URL, tok, key, body, opID, rec)
	if conflicts == 0 {
		t.Errorf("no 409 while the dead worker's lease was live; want the first retry refused")
	}
	if !final.replayed() || final.opID() != opID {
		t.Errorf("takeover answer: replayed %v, operation %q; want a replay of operation %s", final.replayed(), final.opID(), opID)
	}
	row := l.find(opID)
	if rc := final.receipt(t); rc.PaymentID != row.ID.String() || rc.Amount != "41.00" || rc.Status != "succeeded" {
		t.Errorf("takeover receipt %+v; want payment %s of 41.00, succeeded", rc, row.ID)
	}
	l.exactlyOnce("after the takeover", opID)
	if rows, charges := l.byActor(scope(actor)); rows != 1 || charges != 1 {
		t.Errorf("actor has %d payments rows and %d bank charges; want 1 and 1", rows, charges)
	}
	if row.Status != "succeeded" {
		t.Errorf("payment status %q; want succeeded", row.Status)
	}
	r, op := getOperation(t, c.Regions[2].URL, tok, opID)
	if r.Status != http.StatusOK || op.State != "COMPLETED" || op.Attempts != 2 || op.Response == nil ||
		op.Response.Status != http.StatusCreated {
		t.Errorf("operation: %v; want COMPLETED, 2 attempts (the dead run and the takeover), a stored 201", r)
	}
	if rec := readRecord(t, c, opID); strings.HasPrefix(rec.LeaseOwner, proc.worker+"/") {
		t.Errorf("record %+v still names the dead worker; the takeover should own it", rec)
	}
	if now := sumMetric(t, c, metricDecisions, `decision="takeover"`); now-takeovers0 != 1 {
		t.Errorf("%s{decision=\"takeover\"} went from %v to %v; want exactly one takeover", metricDecisions, takeovers0, now)
	}
	again := mustPost(t, c.Regions[0].URL, tok, key, body)
	if again.Status != http.StatusCreated || !again.replayed() || !bytes.Equal(again.Body, final.Body) {
		t.Errorf("replay after the takeover: %v; want the same 201", again)
	}
	t.Logf("drill took %v (from the cluster's start)", time.Since(begin).Round(time.Millisecond))
}

// TestGatewayProcessPausedPastItsLease freezes (SIGSTOP) a real idemd
// process while its payment is at the upstream, keeps it frozen past its
// 5 s lease — the process cannot tell: no heartbeat, no timer runs — and
// lets another region take the operation over and complete it from the
// payments service's record (201, one charge). Then the process is thawed
// (SIGCONT) with its request still in flight: it must not overwrite the
// result. Its client gets 409 (taken over) or the same payment, the stored
// record is not written again (same version, COMPLETED, same payment),
// the process's own replay is the same payment, and the bank holds one
// charge (a zombie worker is fenced by the record's version and owner).
func TestGatewayProcessPausedPastItsLease(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	c := startCluster(t, devcluster.Options{UpstreamTimeout: 5 * time.Second, BankTimeout: 5 * time.Second})
	proc := startIdemd(t, c, "e2e-proc-paused")
	actor := c.ActorHomedIn("us-east", uniqueName("proc-paused"))
	tok := token(t, c, actor)
	key := uniqueName("proc-paused-key")
	body := paymentBody("42.00", "order-proc-paused")
	region := c.Regions[2]
	l := ledger{t, c}

	if err := c.Bank.SetFaults(bank.Faults{DelayAfter: procBankDelay}); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	orig := postAsync(t, proc.URL, tok, key, body)
	// The payments row is inserted before the bank is called.
	opID := waitOperationOf(t, c, "payments row", `SELECT operation_id::TEXT FROM payments WHERE actor = $1`, scope(actor), 10*time.Second)
	proc.signal(syscall.SIGSTOP)
	stoppedAt := time.Now()
	proc.waitProcState("T")
	t.Logf("stopped idemd %v after sending; payments row for operation %s exists", stoppedAt.Sub(sent).Round(time.Millisecond), opID)
	if err := c.Bank.SetFaults(bank.Faults{}); err != nil {
		t.Fatal(err)
	}

	rec := readRecord(t, c, opID)
	t.Logf("record while stopped: %+v", rec)
	if rec.State != "IN_PROGRESS" || !strings.HasPrefix(rec.LeaseOwner, proc.worker+"/") || rec.LeaseLeft <= 0 {
		t.Fatalf("record while stopped: %+v; want IN_PROGRESS under %s's live lease (stopped too late?)", rec, proc.worker)
	}

	final, conflicts := takeoverRetries(t, c, region.URL, tok, key, body, opID, rec)
	if conflicts == 0 {
		t.Errorf("no 409 while the stopped worker's lease was live; want the first retry refused")
	}
	if !final.replayed() || final.opID() != opID {
		t.Errorf("takeover answer: replayed %v, operation %q; want a replay of operation %s", final.replayed(), final.opID(), opID)
	}
	row := l.find(opID)
	rc := final.receipt(t)
	if rc.PaymentID != row.ID.String() || rc.Amount != "42.00" {
		t.Errorf("takeover receipt %+v; want payment %s of 42.00", rc, row.ID)
	}
	l.exactlyOnce("after the takeover, the process still stopped", opID)
	completed := readRecord(t, c, opID)
	if completed.State != "COMPLETED" || strings.HasPrefix(completed.LeaseOwner, proc.worker+"/") {
		t.Fatalf("record after the takeover: %+v; want COMPLETED by the taking region", completed)
	}
	// Still frozen: it took no part in any of that.
	if s := proc.procState(); s != "T" {
		t.Fatalf("idemd state %q during the takeover; want T (stopped)", s)
	}
	// Hold it well past its lease (and past its own upstream timeout).
	// Deliberate: the drill is a real process stopped past its lease; a
	// stopped process's lease cannot be moved by a clock, it must pass.
	time.Sleep(time.Until(stoppedAt.Add(procLease + time.Second)))
	if s := proc.procState(); s != "T" {
		t.Fatalf("idemd state %q before SIGCONT; want T (stopped)", s)
	}
	stopped := time.Since(stoppedAt)
	if stopped <= procLease {
		t.Errorf("process stopped for %v only; the drill needs longer than its %v lease", stopped, procLease)
	}

	proc.signal(syscall.SIGCONT)
	t.Logf("resumed idemd after %v stopped", stopped.Round(time.Millisecond))
	late, err := orig.wait(t, 10*time.Second)
	if err != nil {
		t.Fatalf("the resumed process's client: %v; want an answer", err)
	}
	t.Logf("the resumed process answered its own client: %v", late)
	for _, line := range proc.logLines() {
		if bytes.Contains(line, []byte(opID)) {
			t.Logf("resumed idemd logged: %s", line)
		}
	}
	switch late.Status {
	case http.StatusConflict:
		if p := late.problem(t); !strings.HasSuffix(p.Type, "/in-progress") || p.OperationID != opID || p.NewKeySafe {
			t.Errorf("resumed process's 409 %+v; want in-progress for operation %s, new_key_safe false", p, opID)
		}
		if n := scrape(t, proc.URL).sum("idemcoord_lost_ownership_total"); n < 1 {
			t.Errorf("resumed process answered 409 but idemcoord_lost_ownership_total is %v; want >= 1", n)
		}
	case http.StatusCreated:
		if got := late.receipt(t); got.PaymentID != rc.PaymentID {
			t.Errorf("resumed process answered payment %s; the operation's payment is %s", got.PaymentID, rc.PaymentID)
		}
	default:
		t.Errorf("resumed process answered %v; want 409 (taken over) or the same 201", late)
	}

	// Nothing it did after waking reached the record or the bank.
	if after := readRecord(t, c, opID); after != completed {
		t.Errorf("record after the resume: %+v; want it untouched: %+v", after, completed)
	}
	l.exactlyOnce("after the resume", opID)
	if rows, charges := l.byActor(scope(actor)); rows != 1 || charges != 1 {
		t.Errorf("actor has %d payments rows and %d bank charges; want 1 and 1", rows, charges)
	}
	if row := l.find(opID); row.Status != "succeeded" || row.ID.String() != rc.PaymentID {
		t.Errorf("payment %+v; want %s succeeded", row, rc.PaymentID)
	}
	r, op := getOperation(t, c.Regions[0].URL, tok, opID)
	if r.Status != http.StatusOK || op.State != "COMPLETED" || op.Response == nil || op.Response.Status != http.StatusCreated {
		t.Fatalf("operation after the resume: %v; want COMPLETED with a stored 201", r)
	}
	var stored receipt
	if err := json.Unmarshal(op.Response.Body, &stored); err != nil || stored.PaymentID != rc.PaymentID {
		t.Errorf("stored response names payment %q (%v); want %s", stored.PaymentID, err, rc.PaymentID)
	}
	// The process, awake again, serves the operation's one result.
	own := mustPost(t, proc.URL, tok, key, body)
	if own.Status != http.StatusCreated || !own.replayed() || !bytes.Equal(own.Body, final.Body) {
		t.Errorf("replay through the resumed process: %v; want the taken-over 201", own)
	}
	if s := proc.procState(); s == "T" || s == "Z" || s == "?" {
		t.Errorf("idemd state %q after the drill; want it running", s)
	}
	t.Logf("drill took %v (from the cluster's start)", time.Since(begin).Round(time.Millisecond))
}
