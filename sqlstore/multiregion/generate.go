package multiregion

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// DefaultDatabase is the database the layout alters when Layout.Database
// is empty: the name the dev cluster and the docs use.
const DefaultDatabase = "idemcoord"

// Region is one region of the deployment, as the layout needs it.
type Region struct {
	// Name is the CockroachDB region name (the nodes' --locality region).
	Name string
	// Successors is the region's failover order; the first one is where
	// its shards' leases go when it fails. Empty for a single region.
	Successors []string
}

// Layout is what the generated SQL depends on.
type Layout struct {
	// Database is the database to alter. Default DefaultDatabase.
	Database string
	// Regions are the regions in configuration order: shard s is homed in
	// Regions[s % len(Regions)].
	Regions []Region
	// Primary is the database's primary region (where REGIONAL BY TABLE
	// tables such as repair_audit live). Default Regions[0].
	Primary string
	// Shards is the shard count the store is bootstrapped with; the
	// generated file names it so an operator can check shard_config.
	Shards int
}

var (
	nameRE     = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
	databaseRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)
)

// Validate reports every problem with l.
func (l Layout) Validate() error {
	var errs []error
	if l.Database != "" && !databaseRE.MatchString(l.Database) {
		errs = append(errs, fmt.Errorf("database: must match %s, got %q", databaseRE, l.Database))
	}
	if len(l.Regions) == 0 {
		errs = append(errs, errors.New("regions: at least one region is required"))
	}
	if l.Shards < 1 {
		errs = append(errs, fmt.Errorf("shards: must be at least 1, got %d", l.Shards))
	}
	seen := map[string]bool{}
	for i, r := range l.Regions {
		if !nameRE.MatchString(r.Name) {
			errs = append(errs, fmt.Errorf("regions[%d].name: must match %s, got %q", i, nameRE, r.Name))
		}
		if seen[r.Name] {
			errs = append(errs, fmt.Errorf("regions[%d].name: %q is listed twice", i, r.Name))
		}
		seen[r.Name] = true
	}
	for i, r := range l.Regions {
		for j, s := range r.Successors {
			if !seen[s] || s == r.Name {
				errs = append(errs, fmt.Errorf("regions[%d].successors[%d]: %q is not another listed region", i, j, s))
			}
		}
	}
	if l.Primary != "" && !seen[l.Primary] {
		errs = append(errs, fmt.Errorf("primary: %q is not a listed region", l.Primary))
	}
	return errors.Join(errs...)
}

// Generate returns the CockroachDB-only DDL for l: database regions and
// survival goal, the home-map computed column and REGIONAL BY ROW locality
// of records and fences, the records' primary key starting with shard, the
// lease preferences following each region's successor order, and the
// locking settings the fence needs. See the package doc for why.
func Generate(l Layout) (string, error) {
	if err := l.Validate(); err != nil {
		return "", fmt.Errorf("multiregion: %w", err)
	}
	if l.Database == "" {
		l.Database = DefaultDatabase
	}
	if l.Primary == "" {
		l.Primary = l.Regions[0].Name
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	names := make([]string, len(l.Regions))
	for i, r := range l.Regions {
		names[i] = r.Name
	}
	w("-- CockroachDB-only layout of the idemcoord store, generated from the region topology\n")
	w("-- (idemctl deploy cockroach-sql). Regions in configuration order: %s; %d shards.\n",
		strings.Join(names, ", "), l.Shards)
	w("-- Apply once, after the portable migrations (idemctl migrate applies them), on a cluster whose\n")
	w("-- nodes run with --locality=region=<name>. Never on PostgreSQL. Check first:\n")
	w("--   SELECT shards FROM shard_config;  -- must be %d\n", l.Shards)
	w("-- Regenerate and review before adding or removing a region: the home map below changes.\n\n")

	w("-- Regions and survival goal.\n")
	w("ALTER DATABASE %s SET PRIMARY REGION %q;\n", l.Database, l.Primary)
	for _, n := range names {
		if n != l.Primary {
			w("ALTER DATABASE %s ADD REGION IF NOT EXISTS %q;\n", l.Database, n)
		}
	}
	if len(names) >= 3 {
		w("-- 2+2+1 voters over three regions: a write commits with one ack outside its home region,\n")
		w("-- the physical floor of surviving a region loss.\n")
		w("ALTER DATABASE %s SURVIVE REGION FAILURE;\n\n", l.Database)
	} else {
		w("-- Fewer than three regions cannot survive a region failure: zones only.\n")
		w("ALTER DATABASE %s SURVIVE ZONE FAILURE;\n\n", l.Database)
	}

	home := homeExpr(names)
	w("-- The home map, the same function of shard as region.Topology.Home (shard %% %d in\n", len(names))
	w("-- configuration order). Shared queries never name crdb_region; it is derived from shard.\n")
	for _, t := range []string{"shard_fences", "idempotency_records"} {
		w("ALTER TABLE %s ADD COLUMN IF NOT EXISTS crdb_region crdb_internal_region NOT NULL\n    AS (%s) STORED;\n", t, home)
	}
	w("\n-- The records' primary key starts with shard (crdb_region is computed from it, so the\n")
	w("-- uniqueness check stays in the home region). One statement, so no UNIQUE index is left\n")
	w("-- on the old key: that index would make every claim probe every region.\n")
	w("ALTER TABLE idempotency_records DROP CONSTRAINT idempotency_records_pkey,\n")
	w("    ADD CONSTRAINT idempotency_records_pkey PRIMARY KEY (shard, actor_scope, endpoint, key_hash);\n")
	w("-- operation_id is a time-ordered (v7) UUID from the coordinator; a UNIQUE index on it alone\n")
	w("-- would be checked in every region on every claim. Lookups by id stay indexed (and scoped\n")
	w("-- to the actor); PostgreSQL keeps the unique index. Hash-sharded, so the ids' increasing\n")
	w("-- time prefix spreads over ranges instead of making the index's last range a hot spot.\n")
	w("DROP INDEX IF EXISTS idempotency_records@idempotency_records_operation_id;\n")
	w("CREATE INDEX IF NOT EXISTS idempotency_records_operation_id ON idempotency_records (operation_id) USING HASH;\n\n")

	w("-- Records and fences live in their shard's home region; the fence's FOR SHARE lock is local.\n")
	w("ALTER TABLE idempotency_records SET LOCALITY REGIONAL BY ROW AS crdb_region;\n")
	w("ALTER TABLE shard_fences SET LOCALITY REGIONAL BY ROW AS crdb_region;\n")
	w("-- Repairs are rare and audited in one place; the shard count is read at start everywhere.\n")
	w("ALTER TABLE repair_audit SET LOCALITY REGIONAL BY TABLE IN PRIMARY REGION;\n")
	w("ALTER TABLE shard_config SET LOCALITY GLOBAL;\n\n")

	if len(names) > 1 {
		w("-- Each region's first successor is second in its lease preferences and holds the other\n")
		w("-- two voters, matching the failover order: when a region fails, its shards' leases move\n")
		w("-- to the region that takes its shards over, and no row moves.\n")
		for _, r := range l.Regions {
			next := firstSuccessor(r, names)
			voters := ""
			if len(names) >= 3 {
				voters = fmt.Sprintf(",\n    voter_constraints = '{+region=%s: 2, +region=%s: 2}'", r.Name, next)
			}
			w("ALTER DATABASE %s ALTER LOCALITY REGIONAL IN %q CONFIGURE ZONE USING\n", l.Database, r.Name)
			w("    lease_preferences = '[[+region=%s], [+region=%s]]'%s;\n", r.Name, next, voters)
		}
		w("\n")
	}

	w("-- The fence must be a lock, not a plain read: without these, FOR SHARE under SERIALIZABLE\n")
	w("-- takes no lock and a claim can commit after a transfer bumped the epoch.\n")
	w("ALTER ROLE ALL SET enable_shared_locking_for_serializable = true;\n")
	w("ALTER ROLE ALL SET enable_durable_locking_for_serializable = true;\n")
	return b.String(), nil
}

// homeExpr is the computed column's expression: shard's home region.
func homeExpr(names []string) string {
	if len(names) == 1 {
		return fmt.Sprintf("'%s'::crdb_internal_region", names[0])
	}
	var b strings.Builder
	fmt.Fprintf(&b, "CASE shard %% %d", len(names))
	for i, n := range names[:len(names)-1] {
		fmt.Fprintf(&b, " WHEN %d THEN '%s'", i, n)
	}
	fmt.Fprintf(&b, " ELSE '%s' END::crdb_internal_region", names[len(names)-1])
	return b.String()
}

// firstSuccessor is where r's leases go when r fails: its first configured
// successor, else the next region in configuration order (as
// region.Topology.Successors completes the order).
func firstSuccessor(r Region, names []string) string {
	if len(r.Successors) > 0 {
		return r.Successors[0]
	}
	i := slices.Index(names, r.Name)
	return names[(i+1)%len(names)]
}
