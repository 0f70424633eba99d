package sqlstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/idemcoord/idemcoord/internal/retry"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrSchemaMissing is returned by Open (without Config.Migrate) when the
// store has not been migrated.
var ErrSchemaMissing = errors.New("sqlstore: schema missing or out of date: run idemctl migrate (or idemd run --migrate)")

// schemaTables are the tables the newest portable migration leaves; Open
// checks they exist before it serves from the store.
var schemaTables = []string{"idempotency_records", "shard_fences", "repair_audit", "async_requests", "shard_config"}

// checkSchema fails with ErrSchemaMissing unless every table of the
// portable migrations exists.
func checkSchema(ctx context.Context, pool *pgxpool.Pool) error {
	for _, t := range schemaTables {
		_, err := pool.Exec(ctx, "SELECT 1 FROM "+t+" LIMIT 0")
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42P01" { // undefined_table
			return fmt.Errorf("%w (table %s)", ErrSchemaMissing, t)
		}
		if err != nil {
			return fmt.Errorf("sqlstore: schema check: %w", err)
		}
	}
	ok, err := hasConstraint(ctx, pool, stateCheckName)
	if err != nil {
		return fmt.Errorf("sqlstore: schema check: %w", err)
	}
	if !ok {
		return fmt.Errorf("%w (constraint %s)", ErrSchemaMissing, stateCheckName)
	}
	for _, col := range []string{"first_sent", "compacted", "member_digests"} {
		if ok, err = hasColumn(ctx, pool, col); err != nil {
			return fmt.Errorf("sqlstore: schema check: %w", err)
		} else if !ok {
			return fmt.Errorf("%w (column idempotency_records.%s)", ErrSchemaMissing, col)
		}
	}
	return nil
}

// stateCheckName is the check constraint that holds the records' rules:
// the states a record may be in, and a lease on every running record
// (0009 made it of 0001's lease check and 0006's list of seven states).
const stateCheckName = "idempotency_records_rules"

// hasConstraint reports whether idempotency_records has the constraint
// name.
func hasConstraint(ctx context.Context, pool *pgxpool.Pool, name string) (bool, error) {
	var n int
	err := pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.table_constraints
		WHERE table_schema = current_schema() AND table_name = 'idempotency_records' AND constraint_name = $1`,
		name).Scan(&n)
	return n > 0, err
}

// onlyIf lists migrations that run only while the schema still needs
// them: an ALTER TABLE takes the table's strongest lock even when it
// finds nothing to do, and every instance runs Migrate at each start,
// into a live store.
var onlyIf = map[string]func(context.Context, *pgxpool.Pool) (bool, error){
	"migrations/portable/0006_cancelled_state.sql": func(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
		return hasConstraint(ctx, pool, "idempotency_records_state_valid")
	},
	"migrations/portable/0007_first_sent.sql": func(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
		ok, err := hasColumn(ctx, pool, "first_sent")
		return !ok, err
	},
	"migrations/portable/0008_two_tiers.sql": func(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
		ok, err := hasColumn(ctx, pool, "compacted")
		return !ok, err
	},
	"migrations/portable/0011_member_digests.sql": func(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
		ok, err := hasColumn(ctx, pool, "member_digests")
		return !ok, err
	},
	"migrations/portable/0009_one_rules_check.sql": func(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
		for _, c := range []struct {
			name string
			want bool
		}{{stateCheckName, true}, {"idempotency_records_states", false}, {"idempotency_records_lease", false}} {
			if ok, err := hasConstraint(ctx, pool, c.name); err != nil || ok != c.want {
				return err == nil, err
			}
		}
		return false, nil
	},
}

// stepwise lists migrations whose statements each run in a transaction
// of their own (one multi-statement string is one transaction, which
// would hold the table's strongest lock through a constraint's
// validation), and the errors that mean a statement is already done.
var stepwise = map[string]func(error) bool{
	// 0009's ADD CONSTRAINT meets its own check when a concurrent
	// instance, or a start cut short, added it: go on and validate it.
	"migrations/portable/0009_one_rules_check.sql": func(err error) bool {
		var pe *pgconn.PgError
		return errors.As(err, &pe) && pe.Code == "42710" // duplicate_object
	},
}

// hasColumn reports whether idempotency_records has the column name.
func hasColumn(ctx context.Context, pool *pgxpool.Pool, name string) (bool, error) {
	var n int
	err := pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'idempotency_records' AND column_name = $1`,
		name).Scan(&n)
	return n > 0, err
}

//go:embed migrations/portable/*.sql
var migrations embed.FS

// superseded lists applied migrations a later one undoes. Migrate skips
// them (their files stay as they were applied): 0002 created idem_claim,
// a PL/pgSQL function CockroachDB cannot run, which 0005 drops.
var superseded = map[string]bool{
	"migrations/portable/0002_claim_function.sql": true,
}

// Migrate applies the portable migration set. It is idempotent: every
// statement is CREATE ... IF NOT EXISTS, INSERT ... ON CONFLICT DO NOTHING
// or DROP ... IF EXISTS, or runs only while the schema needs it (onlyIf)
// and settles a concurrent instance's same step (stepwise), so concurrent
// instances starting together are safe.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	names, err := fs.Glob(migrations, "migrations/portable/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		if superseded[name] {
			continue
		}
		if needed, ok := onlyIf[name]; ok {
			run, err := needed(ctx, pool)
			if err != nil {
				return fmt.Errorf("sqlstore: migration %s: %w", name, err)
			}
			if !run {
				continue
			}
		}
		if err := applyMigration(ctx, pool, name); err != nil {
			return err
		}
	}
	return nil
}

// schemaLoop runs a schema step again after any failure, within
// retry.Default.Schema. Instances restart into a live store: a statement can
// meet a concurrent catalog change (several instances starting together)
// or, at SERIALIZABLE, a serialization failure against the traffic (40001,
// 40P01), and running it again settles both.
var schemaLoop = retry.Loop{Budget: retry.Default.Schema}

// applyMigration runs migration name (schemaRetry).
func applyMigration(ctx context.Context, pool *pgxpool.Pool, name string) error {
	b, err := migrations.ReadFile(name)
	if err != nil {
		return err
	}
	done, ok := stepwise[name]
	if !ok {
		return schemaRetry(ctx, "migration "+name, func() error {
			_, err := pool.Exec(ctx, string(b))
			return err
		})
	}
	for i, stmt := range statements(string(b)) {
		err := schemaRetry(ctx, fmt.Sprintf("migration %s, statement %d", name, i+1), func() error {
			_, err := pool.Exec(ctx, stmt)
			if done(err) {
				return nil
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// statements splits a migration file into its statements: comment lines
// dropped, each statement ending with a semicolon at the end of a line.
func statements(file string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(file, "\n") {
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		cur.WriteString(line + "\n")
		if strings.HasSuffix(strings.TrimSpace(line), ";") {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	if strings.TrimSpace(cur.String()) != "" {
		out = append(out, cur.String())
	}
	return out
}

// schemaRetry runs step, again after a failure with a growing pause,
// until it succeeds or schemaLoop's budget or ctx ends.
func schemaRetry(ctx context.Context, what string, step func() error) error {
	err := schemaLoop.Do(ctx, what, func(error) bool { return true }, func(context.Context) error { return step() })
	var ex *retry.ExhaustedError
	if errors.As(err, &ex) {
		return fmt.Errorf("sqlstore: %s (attempt %d): %w", what, ex.Attempts, ex.Err)
	}
	if err != nil {
		return fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	return nil
}
