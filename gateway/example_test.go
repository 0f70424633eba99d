package gateway_test

import (
	"context"
	"fmt"
	"log"
	"net/http"

	"github.com/idemcoord/idemcoord/authn"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/sqlstore"
)

// Example_middleware coordinates a Go service's own handler in-process:
// each POST /v1/payments intent runs at most once per Idempotency-Key,
// and the handler reads the stable operation id from the request.
func Example_middleware() {
	ctx := context.Background()
	cfg, err := config.Load("idemd.yaml") // endpoints, auth, store: see config.Example
	if err != nil {
		log.Fatal(err)
	}
	store, err := sqlstore.Open(ctx, sqlstore.Config{Migrate: true, DSN: cfg.Store.DSN})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	authCfg, err := cfg.AuthConfig()
	if err != nil {
		log.Fatal(err)
	}
	verifier, err := authn.NewVerifier(authCfg)
	if err != nil {
		log.Fatal(err)
	}
	charge := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		opID := r.Header.Get(gateway.HeaderOperationID) // pass it to the bank
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"operation_id":%q}`, opID)
	})
	g, err := gateway.Wrap(gateway.Config{Region: cfg.Region, Worker: cfg.WorkerName(), Store: store,
		Auth: verifier, Endpoints: cfg.Endpoints}, charge)
	if err != nil {
		log.Fatal(err)
	}
	if err := g.Start(ctx); err != nil { // its background loops: async recovery, the move sweep
		log.Fatal(err)
	}
	defer g.Close()
	log.Fatal(http.ListenAndServe(cfg.Listen, g))
}
