package payments_test

import (
	"context"
	"log"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcoord/idemcoord/demo/bank"
	"github.com/idemcoord/idemcoord/demo/payments"
)

// ExampleNew wires the demo upstream as the dev cluster runs it: the bank on
// one port, the payments API (behind the idemcoord gateway) on another, and
// a drill turning a bank knob.
func ExampleNew() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://localhost:5432/demo")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	if err := bank.Migrate(ctx, pool); err != nil {
		log.Fatal(err)
	}
	if err := payments.Migrate(ctx, pool); err != nil {
		log.Fatal(err)
	}

	ledger := bank.New(pool, bank.Options{})
	go http.ListenAndServe("127.0.0.1:8082", ledger)

	// The charge is recorded, but its answer comes after the payments
	// service gave up: the gateway sees a 504 and resolves the operation
	// through GET /internal/operations/{operation_id}.
	ledger.SetFaults(bank.Faults{DelayAfter: 3 * time.Second})

	api := payments.New(pool, "http://127.0.0.1:8082", payments.Options{BankTimeout: time.Second})
	log.Fatal(http.ListenAndServe("127.0.0.1:8081", api))
}
