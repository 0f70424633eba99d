package multiregion_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/region"
	"github.com/idemcoord/idemcoord/sqlstore/multiregion"
)

var update = flag.Bool("update", false, "rewrite testdata/*.sql from the generator")

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// topology is three regions where ap-south fails over to us-east rather
// than to the next in list order.
func topology(t *testing.T) *region.Topology {
	t.Helper()
	top, err := region.New("us-east", []config.Region{
		{Name: "us-east", URL: "http://us-east.example"},
		{Name: "eu-west", URL: "http://eu-west.example"},
		{Name: "ap-south", URL: "http://ap-south.example", Successors: []string{"us-east"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return top
}

// layoutOf is what idemctl deploy cockroach-sql builds from a topology.
func layoutOf(t *testing.T, top *region.Topology, shards int) multiregion.Layout {
	t.Helper()
	l := multiregion.Layout{Shards: shards}
	for _, r := range top.Regions() {
		l.Regions = append(l.Regions, multiregion.Region{Name: r.Name, Successors: r.Successors})
	}
	return l
}

func TestGenerateMatchesGolden(t *testing.T) {
	got, err := multiregion.Generate(layoutOf(t, topology(t), 1024))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "three_regions.sql")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("generated layout differs from %s (run with -update after reviewing):\n%s", path, got)
	}
}

// TestHomeColumnIsTheTopologysHomeMap evaluates the generated computed
// column (as text, on PostgreSQL) for every shard and compares it with
// region.Topology.Home: the rows of a shard must live where its owner is.
func TestHomeColumnIsTheTopologysHomeMap(t *testing.T) {
	top := topology(t)
	const shards = 1024
	sql, err := multiregion.Generate(layoutOf(t, top, shards))
	if err != nil {
		t.Fatal(err)
	}
	exprs := regexp.MustCompile(`(?s)ALTER TABLE (\w+) ADD COLUMN IF NOT EXISTS crdb_region crdb_internal_region NOT NULL\s+AS \((.*?)\) STORED;`).
		FindAllStringSubmatch(sql, -1)
	if len(exprs) != 2 || exprs[0][1] != "shard_fences" || exprs[1][1] != "idempotency_records" {
		t.Fatalf("want the home column on shard_fences and idempotency_records, got %q", exprs)
	}
	if exprs[0][2] != exprs[1][2] {
		t.Fatalf("records and fences are homed differently:\n%s\n%s", exprs[0][2], exprs[1][2])
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	expr := strings.ReplaceAll(exprs[0][2], "::crdb_internal_region", "::TEXT")
	rows, err := conn.Query(ctx, fmt.Sprintf(`SELECT shard, %s FROM generate_series(0, %d) AS g(shard) ORDER BY shard`, expr, shards-1))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	n := 0
	for rows.Next() {
		var (
			shard int
			home  string
		)
		if err := rows.Scan(&shard, &home); err != nil {
			t.Fatal(err)
		}
		if want := top.Home(shard); home != want {
			t.Fatalf("shard %d: computed column says %q, topology says %q", shard, home, want)
		}
		n++
	}
	if rows.Err() != nil || n != shards {
		t.Fatalf("evaluated %d shards (%v), want %d", n, rows.Err(), shards)
	}
}

func TestGenerateKeepsClaimsLocal(t *testing.T) {
	top := topology(t)
	sql, err := multiregion.Generate(layoutOf(t, top, 1024))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`ALTER DATABASE idemcoord SET PRIMARY REGION "us-east";`,
		`ALTER DATABASE idemcoord ADD REGION IF NOT EXISTS "eu-west";`,
		`ALTER DATABASE idemcoord ADD REGION IF NOT EXISTS "ap-south";`,
		`ALTER DATABASE idemcoord SURVIVE REGION FAILURE;`,
		`ALTER TABLE idempotency_records SET LOCALITY REGIONAL BY ROW AS crdb_region;`,
		`ALTER TABLE shard_fences SET LOCALITY REGIONAL BY ROW AS crdb_region;`,
		`ADD CONSTRAINT idempotency_records_pkey PRIMARY KEY (shard, actor_scope, endpoint, key_hash);`,
		`ALTER ROLE ALL SET enable_shared_locking_for_serializable = true;`,
		`ALTER ROLE ALL SET enable_durable_locking_for_serializable = true;`,
	} {
		if !strings.Contains(sql, want) {
			t.Errorf("layout lacks %s", want)
		}
	}
	for _, bad := range []string{"ALTER PRIMARY KEY", "shard_fences SET LOCALITY GLOBAL", "gateway_region()", "UNIQUE INDEX"} {
		if strings.Contains(sql, bad) {
			t.Errorf("layout contains %q, which costs a claim a cross-region round trip", bad)
		}
	}
	// Lease preferences: home first, the first successor second, as the
	// failover order says (ap-south fails over to us-east, not eu-west).
	for _, r := range top.Regions() {
		want := fmt.Sprintf(`ALTER DATABASE idemcoord ALTER LOCALITY REGIONAL IN %q CONFIGURE ZONE USING
    lease_preferences = '[[+region=%s], [+region=%s]]',
    voter_constraints = '{+region=%s: 2, +region=%s: 2}';`, r.Name, r.Name, r.Successors[0], r.Name, r.Successors[0])
		if !strings.Contains(sql, want) {
			t.Errorf("layout lacks, for %s:\n%s", r.Name, want)
		}
	}
}

func TestGenerateRefusesABadLayout(t *testing.T) {
	tests := []struct {
		name string
		l    multiregion.Layout
		want string
	}{
		{"no regions", multiregion.Layout{Shards: 4}, "regions: at least one region"},
		{"no shards", multiregion.Layout{Regions: []multiregion.Region{{Name: "a"}}}, "shards: must be at least 1"},
		{"quote in a name", multiregion.Layout{Shards: 4, Regions: []multiregion.Region{{Name: `a"; DROP`}}}, "regions[0].name"},
		{"unknown successor", multiregion.Layout{Shards: 4, Regions: []multiregion.Region{{Name: "a", Successors: []string{"b"}}}}, "regions[0].successors[0]"},
		{"unknown primary", multiregion.Layout{Shards: 4, Primary: "b", Regions: []multiregion.Region{{Name: "a"}}}, "primary"},
		{"bad database", multiregion.Layout{Shards: 4, Database: "x;y", Regions: []multiregion.Region{{Name: "a"}}}, "database"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := multiregion.Generate(tt.l); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Generate = %v, want an error naming %q", err, tt.want)
			}
		})
	}
}
