package ownership_test

import (
	"context"
	"log"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/region"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/sqlstore"
)

// A daemon bootstraps the directory at start (refusing to run with a
// shard count etcd disagrees with), routes with the cache, and an
// operator moves a shard with one resumable call.
func Example() {
	ctx := context.Background()
	var (
		cli   *clientv3.Client    // connected to etcd
		store *sqlstore.Store     // the SQL store, holding the fences
		topo  *region.Topology    // from the config
		actor = "tenant-1/user-7" // from the authenticated principal
	)
	dir := ownership.NewDirectory(cli, store)
	if err := dir.Bootstrap(ctx, topo, shard.DefaultCount); err != nil {
		log.Fatal(err) // *ownership.ShardCountError: the configured count is wrong
	}
	cfg := ownership.DefaultCacheConfig()
	cfg.Client = cli
	cache, err := ownership.NewCache(cfg)
	if err != nil {
		log.Fatal(err)
	}
	if err := cache.Start(ctx); err != nil { // reads the whole map, then watches it until Close
		log.Fatal(err)
	}
	defer cache.Close()

	shard := shard.Of(actor, shard.DefaultCount)
	owner, epoch, state, _ := cache.Owner(shard) // no etcd call
	log.Println(owner, epoch, state)

	moved, err := dir.Move(ctx, shard, "eu-west", ownership.Active, "alice", "drain us-east")
	if err != nil {
		log.Fatal(err) // fencing.ErrMoveConflict: someone else moved it; re-read and decide
	}
	log.Println(moved)
}
