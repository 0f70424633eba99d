package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/internal/testutil"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// releaseEnv is a store through a proxy (with metrics and logs) and a
// direct store on the same database, sharing the database clock.
type releaseEnv struct {
	direct, via *sqlstore.Store
	proxy       *pgProxy
	logs        *logRecorder
	metrics     *sdkmetric.ManualReader
	clock       *clock.Fake
}

func newReleaseEnv(t *testing.T) *releaseEnv {
	t.Helper()
	e := &releaseEnv{logs: &logRecorder{}, metrics: sdkmetric.NewManualReader(), clock: newClock()}
	dsn := pgtest.NewDatabase(t)
	e.direct = openDSN(t, dsn, e.clock)
	e.proxy = newPGProxy(t, dsn)
	var err error
	e.via, err = sqlstore.Open(context.Background(), sqlstore.Config{Migrate: true, DSN: e.proxy.dsn, DBClock: e.clock,
		MaxConns: 4, Seed: 5, Logger: slog.New(e.logs),
		Meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(e.metrics)).Meter("test")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.via.Close)
	return e
}

// giveUpOnCommittedClaim claims req through the proxy, loses the claim's
// answer after it committed, and keeps the store down from then on, so
// that settling the claim fails too and Begin gives up. It returns the
// tripwire (clear its down to bring the store back) and the record the
// claim left: IN_PROGRESS (PENDING for an async claim) at version 1 under
// a lease owner nobody holds.
func (e *releaseEnv) giveUpOnCommittedClaim(t *testing.T, req store.ClaimRequest) (*tripwire, store.Record) {
	t.Helper()
	w, _ := e.proxy.cut(t, "claim", loseAnswer, false, claimStatement)
	w.stayDown.Store(true)
	w.armed.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := e.via.Begin(ctx, req)
	if !w.Fired() {
		t.Fatal("the tripwire never cut the claim")
	}
	if err == nil || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Begin = %v %v, want it to give up with ErrUnavailable (logs %q)", c.Outcome, err, e.logs.find(""))
	}
	want := idempotency.InProgress
	if req.Pending {
		want = idempotency.Pending
	}
	rec, err := e.direct.Read(context.Background(), req.Scope)
	if err != nil || rec.State != want || rec.Version != 1 {
		t.Fatalf("record %s v%d (%v): want the claim committed after all, %s v1", rec.State, rec.Version, err, want)
	}
	return w, rec
}

// releases is idemcoord.claim_releases by result.
func (e *releaseEnv) releases(t *testing.T) map[string]int64 {
	return counter(t, e.metrics, "idemcoord.claim_releases", "result")
}

// TestAClaimWhoseCommitWasLostIsReleasedOnceTheStoreAnswers: a claim
// whose commit answer is lost, and whose settling fails because the store
// stays down, gives up: nothing was sent for it, but its record exists,
// IN_PROGRESS under a lease owner nobody holds. Once the store answers
// again, the store releases it (RETRYABLE_FAILURE, not sent, the same
// operation, counted and logged without the key), and the next Begin of
// the key runs it at once: no 409 for the rest of the lease, and no clock
// moved.
func TestAClaimWhoseCommitWasLostIsReleasedOnceTheStoreAnswers(t *testing.T) {
	e := newReleaseEnv(t)
	req := request(t, "tenant/alice", "lost-claim", `{}`)
	w, claimed := e.giveUpOnCommittedClaim(t, req)

	w.down.Store(false) // the store answers again
	var rec store.Record
	testutil.Eventually(t, 10*time.Second, func() error {
		var err error
		rec, err = e.direct.Read(context.Background(), req.Scope)
		if err == nil && rec.State != idempotency.RetryableFailure {
			err = fmt.Errorf("record %s v%d", rec.State, rec.Version)
		}
		if err == nil && len(e.logs.find("unconfirmed claim released")) == 0 {
			// The release counts and logs right after its write commits.
			err = fmt.Errorf("record released, not yet counted and logged")
		}
		return err
	})
	if rec.Version != 2 || rec.OperationID != claimed.OperationID || rec.LeaseOwner != claimed.LeaseOwner ||
		!strings.HasPrefix(rec.ErrorSummary, "not sent") {
		t.Errorf("released record v%d op %v owner %q summary %q: want the claim itself (v1 -> v2), recorded as not sent",
			rec.Version, rec.OperationID, rec.LeaseOwner, rec.ErrorSummary)
	}
	if got := e.releases(t); got["released"] != 1 {
		t.Errorf("claim_releases = %v, want released 1", got)
	}
	logs := e.logs.find("unconfirmed claim released")
	if len(logs) != 1 {
		t.Errorf("release logs %q, want one", e.logs.find(""))
	}
	for _, l := range e.logs.find("") {
		if strings.Contains(l, "lost-claim") {
			t.Errorf("log %q contains the raw key", l)
		}
	}

	c, err := e.via.Begin(context.Background(), req)
	if err != nil || c.Outcome != store.TakenOver || c.Lease == nil || c.Record.State != idempotency.RetryableFailure {
		t.Fatalf("retry = %v (record %s, retry after %v) %v: want it to run the intent at once (take the released claim over)",
			c.Outcome, c.Record.State, c.RetryAfter, err)
	}
}

// TestAnUnconfirmedClaimTakenOverMeanwhileIsLeftAlone: while the store
// was down for the instance whose claim gave up, another worker took the
// claim over (its lease ran out). Once the store answers again, the
// release finds a record that is no longer that claim and leaves it
// alone: the other worker's lease, owner and state stand.
func TestAnUnconfirmedClaimTakenOverMeanwhileIsLeftAlone(t *testing.T) {
	e := newReleaseEnv(t)
	req := request(t, "tenant/alice", "taken-claim", `{}`)
	w, _ := e.giveUpOnCommittedClaim(t, req)

	e.clock.Advance(req.Lease + time.Second)
	other := mustBegin(t, e.direct, req, store.TakenOver)

	w.down.Store(false)
	testutil.Eventually(t, 10*time.Second, func() error {
		if got := e.releases(t); got["left"] != 1 {
			return fmt.Errorf("claim_releases %v, want left 1", got)
		}
		return nil
	})
	rec, err := e.direct.Read(context.Background(), req.Scope)
	if err != nil || rec.State != idempotency.InProgress || rec.Version != other.Lease.Version ||
		rec.LeaseOwner != other.Lease.Owner {
		t.Fatalf("record %s v%d owner %q (%v): want the other worker's claim untouched (v%d, %q)",
			rec.State, rec.Version, rec.LeaseOwner, err, other.Lease.Version, other.Lease.Owner)
	}
	if got := e.releases(t); got["released"] != 0 {
		t.Errorf("claim_releases = %v: nothing may be released", got)
	}
	if err := e.direct.Finish(context.Background(), other.Lease, completed(`{}`)); err != nil {
		t.Errorf("the other worker's finish: %v", err)
	}
}

// TestAnUnconfirmedAsyncClaimIsReleasedOnceTheStoreAnswers: an async
// (PENDING) claim that Begin gave up on is released like a synchronous
// one. Recovery never runs it (it only takes over claims with a stored
// request, and the caller, told the store was down, stored none), so left
// alone it would answer every retry 202 for an operation nothing runs
// until its lease ends. Released, the next Begin takes it over at once:
// the retry's 202 is for a run that happens.
func TestAnUnconfirmedAsyncClaimIsReleasedOnceTheStoreAnswers(t *testing.T) {
	e := newReleaseEnv(t)
	req := request(t, "tenant/alice", "lost-async-claim", `{}`)
	req.Pending = true
	w, claimed := e.giveUpOnCommittedClaim(t, req)
	var stored int
	if err := e.direct.Pool().QueryRow(context.Background(), `SELECT count(*) FROM async_requests`).Scan(&stored); err != nil || stored != 0 {
		t.Fatalf("stored requests %d (%v): want none, recovery has nothing to run", stored, err)
	}

	w.down.Store(false) // the store answers again
	testutil.Eventually(t, 10*time.Second, func() error {
		rec, err := e.direct.Read(context.Background(), req.Scope)
		if err == nil && rec.State != idempotency.RetryableFailure {
			err = fmt.Errorf("record %s v%d", rec.State, rec.Version)
		}
		if err == nil && e.releases(t)["released"] == 0 {
			// The release counts right after its write commits, so a
			// reader can see the record released before the count.
			err = fmt.Errorf("record released, not yet counted")
		}
		return err
	})
	if got := e.releases(t); got["released"] != 1 {
		t.Errorf("claim_releases = %v, want released 1", got)
	}
	c, err := e.via.Begin(context.Background(), req)
	if err != nil || c.Outcome != store.TakenOver || c.Lease == nil || c.Lease.OperationID != claimed.OperationID {
		t.Fatalf("retry = %v (record %s) %v: want it to take the released claim over and run it", c.Outcome, c.Record.State, err)
	}
}

// TestAReleaseTheStoreCouldNotTakeIsMadeOnceItAnswers: a worker gives up
// a run that sent nothing (Release) while the store is down, through a
// lease that is behind its own "sending" mark (the mark committed, its
// answer lost). Release returns the outage, keeps the release, and makes
// it once the store answers again: the record ends RETRYABLE_FAILURE, not
// sent, and no takeover can find the mark and call the outcome unknown.
func TestAReleaseTheStoreCouldNotTakeIsMadeOnceItAnswers(t *testing.T) {
	e := newReleaseEnv(t)
	ctx := context.Background()
	req := request(t, "tenant/alice", "release-later", `{}`)
	c := mustBegin(t, e.via, req, store.FirstRun)
	behind := *c.Lease
	if err := e.via.RecordStage(ctx, c.Lease, "sending"); err != nil {
		t.Fatal(err)
	}
	e.proxy.proxy.Stop()
	e.via.Pool().Reset()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err := e.via.Release(cctx, &behind, "not sent: test")
	cancel()
	if !errors.Is(err, store.ErrUnavailable) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Release on a dead store = %v, want the outage", err)
	}
	if err := e.proxy.proxy.Start(); err != nil { // the store answers again
		t.Fatal(err)
	}
	var rec store.Record
	testutil.Eventually(t, 10*time.Second, func() error {
		var err error
		rec, err = e.direct.Read(ctx, req.Scope)
		if err == nil && rec.State != idempotency.RetryableFailure {
			err = fmt.Errorf("record %s at stage %q", rec.State, rec.LastStage)
		}
		if err == nil && e.releases(t)["released"] == 0 {
			// Counted right after the write commits, not with it.
			err = fmt.Errorf("record released, not yet counted")
		}
		return err
	})
	if rec.ErrorSummary != "not sent: test" || rec.LeaseOwner != c.Lease.Owner {
		t.Errorf("released record %q owner %q, want the lease's own release, not sent", rec.ErrorSummary, rec.LeaseOwner)
	}
	if got := e.releases(t); got["released"] != 1 {
		t.Errorf("claim_releases = %v, want released 1", got)
	}
	e.clock.Advance(req.Lease + time.Second)
	if again := mustBegin(t, e.via, req, store.TakenOver); again.Lease.LastStage != "" {
		t.Errorf("takeover after the lease resumes from %q, want no mark", again.Lease.LastStage)
	}
}
