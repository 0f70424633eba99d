package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/demo/payments"
	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/internal/testutil"
)

// ledger reads what actually happened downstream: payments rows and bank
// charges, by operation, by actor and in total. Every number comes from the
// database, never from an answer the gateway gave.
type ledger struct {
	t *testing.T
	c *devcluster.Cluster
}

// read runs one read, again on error a few times: after PostgreSQL was
// halted and resumed the inspection pool still holds dead connections,
// which fail once each.
func (l ledger) read(what string, fn func(ctx context.Context) error) {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(l.t.Context(), 10*time.Second)
	defer cancel()
	if err := testutil.PollEvery(5*time.Second, 100*time.Millisecond, func() error { return fn(ctx) }); err != nil {
		l.t.Fatalf("%s: %v", what, err)
	}
}

// charges is the bank's charge count for one operation id.
func (l ledger) charges(opID string) (n int) {
	l.t.Helper()
	l.read("bank count", func(ctx context.Context) (err error) {
		n, err = l.c.Bank.Count(ctx, opID)
		return err
	})
	return n
}

// payments is the payments row count for one operation id.
func (l ledger) payments(opID string) (n int) {
	l.t.Helper()
	l.read("payments count", func(ctx context.Context) (err error) {
		n, err = payments.Count(ctx, l.c.Pool, opID)
		return err
	})
	return n
}

// find is the payment row of one operation id.
func (l ledger) find(opID string) (p payments.Payment) {
	l.t.Helper()
	l.read("find payment of operation "+opID, func(ctx context.Context) (err error) {
		p, err = payments.Find(ctx, l.c.Pool, opID)
		return err
	})
	return p
}

// byActor counts the payments rows and bank charges of one actor scope,
// whatever their operation ids: a second operation for one key would show
// here even though each operation alone counts one.
func (l ledger) byActor(scope string) (rows, charges int) {
	l.t.Helper()
	l.read("payments by actor", func(ctx context.Context) error {
		return l.c.Pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE actor = $1`, scope).Scan(&rows)
	})
	l.read("charges by actor", func(ctx context.Context) error {
		return l.c.Pool.QueryRow(ctx, `SELECT count(*) FROM bank_charges WHERE actor = $1`, scope).Scan(&charges)
	})
	return rows, charges
}

// totals counts every payments row and bank charge.
func (l ledger) totals() (rows, charges int) {
	l.t.Helper()
	l.read("payments total", func(ctx context.Context) error {
		return l.c.Pool.QueryRow(ctx, `SELECT count(*) FROM payments`).Scan(&rows)
	})
	l.read("bank total", func(ctx context.Context) (err error) {
		charges, err = l.c.Bank.Total(ctx)
		return err
	})
	return rows, charges
}

// exactlyOnce fails the test unless opID has one payments row and one bank
// charge.
func (l ledger) exactlyOnce(what, opID string) {
	l.t.Helper()
	if rows, charges := l.payments(opID), l.charges(opID); rows != 1 || charges != 1 {
		l.t.Errorf("%s (operation %s): %d payments rows and %d bank charges; want exactly 1 and 1", what, opID, rows, charges)
	}
}
