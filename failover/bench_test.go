package failover_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/sqlstore"
)

// BenchmarkRegionFailover1024Shards times the move part of a failover at
// the default shard count: one region's 342 shards moved to their
// failover region, n at a time (3-member etcd, local
// PostgreSQL). Each iteration fails us-east over, then (untimed) back.
func BenchmarkRegionFailover1024Shards(b *testing.B) {
	ctx := context.Background()
	s, err := sqlstore.Open(ctx, sqlstore.Config{Migrate: true, DSN: pgtest.NewDatabase(b), Seed: 1, Logger: quiet(), MaxConns: 32})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	cli := benchClient(b)
	topo := topologyB(b)
	d := ownership.NewDirectory(cli, s, ownership.WithPrefix("/bench/"+b.Name()+"/"), ownership.WithLogger(quiet()))
	if err := d.Bootstrap(ctx, topo, 1024); err != nil {
		b.Fatal(err)
	}
	for _, conc := range []int{16, failover.DefaultMoveConcurrency} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			benchFailover(b, failover.Repair{Client: cli, Directory: d, Topology: topo, Audit: s, Concurrency: conc})
		})
	}
}

func benchFailover(b *testing.B, r failover.Repair) {
	ctx := context.Background()
	for b.Loop() {
		moved, err := r.Failover(ctx, "us-east", "bench", "bench")
		if err != nil || len(moved) != 342 {
			b.Fatalf("failover: %d moved, %v", len(moved), err)
		}
		b.StopTimer()
		if _, err := r.Failback(ctx, "us-east", "bench", "bench"); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
