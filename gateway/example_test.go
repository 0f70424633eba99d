package gateway_test

import (
	"context"
	"fmt"
	"log"
	"net/http"

	"github.com/idemcoord/idemcoord/authn"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/region"
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
	g, closeAll, err := coordinate(ctx, cfg, http.HandlerFunc(charge))
	if err != nil {
		log.Fatal(err)
	}
	defer closeAll()
	log.Fatal(http.ListenAndServe(cfg.Listen, g))
}

// charge is the service's own handler: it runs once per intent.
func charge(w http.ResponseWriter, r *http.Request) {
	opID := r.Header.Get(gateway.HeaderOperationID) // pass it to the bank
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"operation_id":%q}`, opID)
}

// coordinate opens the store cfg names, gives every shard its owner,
// and returns next wrapped in a started gateway, with what closes both.
func coordinate(ctx context.Context, cfg *config.Config, next http.Handler) (*gateway.Gateway, func(), error) {
	// The zero Config gets the store's production defaults (group commit
	// included); Migrate creates the schema on a fresh database.
	store, err := sqlstore.Open(ctx, sqlstore.Config{Migrate: true, DSN: cfg.Store.DSN})
	if err != nil {
		return nil, nil, err
	}
	// Every shard needs an owner before anything is served, or every
	// request is refused 503 (Start says so). Single-region: all are this
	// region's. It never changes an owned shard: safe on every start.
	topo, err := region.FromConfig(cfg)
	if err == nil {
		err = store.BootstrapFences(ctx, cfg.Shards, topo.Home)
	}
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	authCfg, err := cfg.AuthConfig()
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	verifier, err := authn.NewVerifier(authCfg)
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	g, err := gateway.Wrap(gateway.Config{Region: cfg.Region, Worker: cfg.WorkerName(), Shards: cfg.Shards,
		Store: store, Auth: verifier, Endpoints: cfg.Endpoints}, next)
	if err == nil {
		err = g.Start(ctx) // its background loops: async recovery, the move sweep
	}
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return g, func() { g.Close(); store.Close() }, nil
}
