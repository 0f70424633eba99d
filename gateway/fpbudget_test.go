package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/gateway"
)

// TestFingerprintBudgetAnswers503WhenNoneFreesInTime holds the whole
// budget: a request then waits the budget's wait (on a fake clock) and is
// answered 503 with Retry-After, without running; once the budget is free
// the same key runs.
func TestFingerprintBudgetAnswers503WhenNoneFreesInTime(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	budget := gateway.NewFingerprintBudget(1<<20, 3*time.Second, clk)
	var runs atomic.Int64
	srv := serveWithBudget(t, budget, "", countingHandler(&runs))
	auth := token(t, "carol")
	release, err := budget.Acquire(context.Background(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}

	type answer struct {
		status int
		h      http.Header
		body   string
	}
	done := make(chan answer, 1)
	go func() {
		s, h, b := do(t, post(t, srv.URL+"/v1/things", auth, "busy-1", `{"amount":1}`))
		done <- answer{s, h, b}
	}()
	clk.BlockUntil(1) // the request waits for budget
	clk.Advance(3 * time.Second)
	a := <-done
	if a.status != http.StatusServiceUnavailable || a.h.Get("Retry-After") != "1" || !strings.Contains(a.body, "/overloaded") {
		t.Fatalf("answer = %d Retry-After %q %s, want 503 overloaded with Retry-After 1", a.status, a.h.Get("Retry-After"), a.body)
	}
	if strings.Contains(a.body, `"new_key_safe":true`) {
		t.Errorf("503 says a new key is safe, but an earlier attempt under the key may have run: %s", a.body)
	}
	if runs.Load() != 0 || budget.Waiting() != 0 {
		t.Fatalf("after the 503: %d runs, %d waiters; want none", runs.Load(), budget.Waiting())
	}

	release()
	if s, _, b := do(t, post(t, srv.URL+"/v1/things", auth, "busy-1", `{"amount":1}`)); s != http.StatusCreated {
		t.Fatalf("same key with the budget free: %d, want 201: %s", s, b)
	}
}

// TestFingerprintBudgetLetsAWaiterInWhenBytesFree checks that a request
// waiting for budget runs as soon as the bytes are released, before its
// wait is over.
func TestFingerprintBudgetLetsAWaiterInWhenBytesFree(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	budget := gateway.NewFingerprintBudget(1<<20, time.Minute, clk)
	var runs atomic.Int64
	srv := serveWithBudget(t, budget, "", countingHandler(&runs))
	release, err := budget.Acquire(context.Background(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	go func() {
		s, _, _ := do(t, post(t, srv.URL+"/v1/things", token(t, "dave"), "wait-1", `{"amount":1}`))
		done <- s
	}()
	clk.BlockUntil(1)
	release()
	if s := <-done; s != http.StatusCreated || runs.Load() != 1 {
		t.Fatalf("status %d after %d runs, want 201 after 1", s, runs.Load())
	}
}

// TestConcurrentFingerprintsNeverExceedTheBudget sends 100 different 1 MiB
// JSON bodies at once through real HTTP: every one is answered 201, and the
// body bytes being fingerprinted at once never exceeded the 4 MiB budget,
// which is what bounds the fingerprinting memory of a burst.
func TestConcurrentFingerprintsNeverExceedTheBudget(t *testing.T) {
	const budgetBytes, parallel = 4 << 20, 100
	budget := gateway.NewFingerprintBudget(budgetBytes, 10*time.Minute, nil)
	var runs atomic.Int64
	srv := serveWithBudget(t, budget, "", countingHandler(&runs))
	auth := token(t, "erin")
	pad := strings.Repeat("x", 1<<20-64)
	var wg sync.WaitGroup
	errs := make(chan error, parallel)
	for i := range parallel {
		wg.Go(func() {
			body := fmt.Sprintf(`{"n":%d,"blob":"%s"}`, i, pad)
			s, _, b := do(t, post(t, srv.URL+"/v1/things", auth, fmt.Sprintf("big-%d", i), body))
			if s != http.StatusCreated {
				errs <- fmt.Errorf("request %d: %d %.200s", i, s, b)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := runs.Load(); got != parallel {
		t.Errorf("%d runs, want %d", got, parallel)
	}
	if peak := budget.Peak(); peak > budgetBytes || peak < 1<<20-64 {
		t.Errorf("peak fingerprinting bytes = %d, want between one body and the budget %d", peak, budgetBytes)
	}
	if budget.InUse() != 0 {
		t.Errorf("%d bytes still held after every request finished", budget.InUse())
	}
}

// TestFingerprintBudgetServesWaitersInArrivalOrder checks the semaphore
// itself: a small request never overtakes a large one that waits, a body
// larger than the budget takes all of it, and a waiter that gives up lets
// the next one in.
func TestFingerprintBudgetServesWaitersInArrivalOrder(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	b := gateway.NewFingerprintBudget(10, time.Minute, clk)
	all, err := b.Acquire(ctx, 1000) // larger than the budget
	if err != nil || b.InUse() != 10 {
		t.Fatalf("Acquire(1000) = %v, in use %d; want the whole budget of 10", err, b.InUse())
	}
	got := make(chan string, 3)
	acquire := func(ctx context.Context, name string, n int64) {
		rel, err := b.Acquire(ctx, n)
		if err != nil {
			got <- name + ": " + err.Error()
			return
		}
		got <- name
		_ = rel // held until the test ends
	}
	go acquire(ctx, "a8", 8)
	clk.BlockUntil(1)
	go acquire(ctx, "b5", 5)
	clk.BlockUntil(2)
	cctx, cancel := context.WithCancel(ctx)
	go acquire(cctx, "c1", 1) // fits, but arrived after b5
	clk.BlockUntil(3)
	all()
	if g := <-got; g != "a8" {
		t.Fatalf("first granted %q, want a8", g)
	}
	if b.Waiting() != 2 {
		t.Fatalf("%d waiting, want b5 and c1 (c1 must not overtake b5)", b.Waiting())
	}
	cancel()
	if g := <-got; !strings.HasPrefix(g, "c1: ") || !strings.Contains(g, gateway.ErrFingerprintBusy.Error()) {
		t.Fatalf("cancelled waiter got %q, want c1 refused as busy", g)
	}
	if b.Waiting() != 1 || b.Peak() > 10 {
		t.Fatalf("waiting %d peak %d; want b5 still waiting and peak within 10", b.Waiting(), b.Peak())
	}
	clk.Advance(time.Minute)
	if g := <-got; !strings.HasPrefix(g, "b5: ") {
		t.Fatalf("timed-out waiter got %q, want b5 refused", g)
	}
	gone, cancelGone := context.WithCancel(ctx)
	cancelGone() // a client that hung up waits for nothing
	if _, err := b.Acquire(gone, 5); !errors.Is(err, gateway.ErrFingerprintBusy) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire for a gone client = %v, want ErrFingerprintBusy and context.Canceled", err)
	}
}
