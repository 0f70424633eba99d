package payments_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcoord/idemcoord/demo/bank"
	"github.com/idemcoord/idemcoord/demo/payments"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/internal/toxitest"
)

// TestAPaymentLeftPendingWithNothingChargedIsReleasedOnceTheDatabaseAnswers:
// the bank answers "not recorded" while the payments database is away (a
// failover), so the execution cannot mark its row failed and answers 502
// with the row still pending. Nothing of it was charged, and no bank call
// of it is in flight, so the row must not stay pending: every retry would
// ask the bank, find no charge and answer 409 for good (the store drills'
// stuck intents). Once the database answers again the row is released as
// failed, and the next retry charges it exactly once.
func TestAPaymentLeftPendingWithNothingChargedIsReleasedOnceTheDatabaseAnswers(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	direct, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(direct.Close)
	if err := bank.Migrate(ctx, direct); err != nil {
		t.Fatal(err)
	}
	if err := payments.Migrate(ctx, direct); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	proxy := toxitest.Proxy(t, "payments-db", u.Host)
	u.Host = proxy.Listen
	pool, err := pgxpool.New(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)

	// The bank keeps its ledger on the direct pool; the charge request
	// that it answers "not recorded" arrives while the payments database
	// is unreachable.
	b := bank.New(direct, bank.Options{})
	cut := true
	bankTS := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && cut {
			cut = false
			proxy.Stop()
			if err := b.SetFaults(bank.Faults{FailNext: 1, FailStatus: http.StatusInternalServerError}); err != nil {
				t.Error(err)
			}
		}
		b.ServeHTTP(w, r)
	}))
	t.Cleanup(bankTS.Close)
	srv := payments.New(pool, bankTS.URL, payments.Options{BankTimeout: 5 * time.Second})
	t.Cleanup(srv.Close)
	payTS := httptest.NewServer(srv)
	t.Cleanup(payTS.Close)
	e := &env{pool: direct, bank: b, bankTS: bankTS, payTS: payTS}

	op := newOp()
	if a := e.pay(t, op, order("order-released")); a.status != http.StatusBadGateway {
		t.Fatalf("pay while the database is away = %d %s, want 502", a.status, a.body)
	}
	if n := e.charges(t, op); n != 0 {
		t.Fatalf("after the refused charge: %d charges, want 0", n)
	}
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	// The release runs in the background: poll the row, bounded.
	deadline := time.Now().Add(30 * time.Second)
	for e.find(t, op).Status == payments.StatusPending {
		if time.Now().After(deadline) {
			if a := e.pay(t, op, order("order-released")); a.status == http.StatusConflict {
				t.Fatalf("the row stayed pending with nothing charged: every retry answers 409 (%s)", a.body)
			}
			t.Fatal("the row stayed pending with nothing charged")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if p := e.find(t, op); p.Status != payments.StatusFailed {
		t.Fatalf("released row status %s, want failed", p.Status)
	}
	if a := e.pay(t, op, order("order-released")); a.status != http.StatusCreated {
		t.Fatalf("retry after the release = %d %s, want 201", a.status, a.body)
	}
	if n := e.charges(t, op); n != 1 {
		t.Errorf("bank charges = %d, want exactly 1", n)
	}
}
