package sqlstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"

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
	for _, col := range []string{"first_sent", "compacted"} {
		if ok, err = hasColumn(ctx, pool, col); err != nil {
			return fmt.Errorf("sqlstore: schema check: %w", err)
		} else if !ok {
			return fmt.Errorf("%w (column idempotency_records.%s)", ErrSchemaMissing, col)
		}
	}
	return nil
}

// stateCheckName is the check constraint that lists the states a record
// may be in (0006 replaced 0001's, which lacked CANCELLED).
const stateCheckName = "idempotency_records_states"

// stateCheckSQL adds stateCheckName.
const stateCheckSQL = `ALTER TABLE idempotency_records ADD CONSTRAINT ` + stateCheckName + ` CHECK (state IN
	('PENDING', 'IN_PROGRESS', 'COMPLETED', 'RETRYABLE_FAILURE', 'TERMINAL_FAILURE', 'OUTCOME_UNKNOWN', 'CANCELLED'))`

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
}

// hasColumn reports whether idempotency_records has the column name.
func hasColumn(ctx context.Context, pool *pgxpool.Pool, name string) (bool, error) {
	var n int
	err := pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'idempotency_records' AND column_name = $1`,
		name).Scan(&n)
	return n > 0, err
}

// ensureStateCheck adds stateCheckName unless it exists. Instances that
// start together may both try: the loser's duplicate_object (42710), or
// the catalog conflict a concurrent ALTER can raise, is settled by
// looking again (schemaRetry).
func ensureStateCheck(ctx context.Context, pool *pgxpool.Pool) error {
	return schemaRetry(ctx, "add "+stateCheckName, func() error {
		ok, err := hasConstraint(ctx, pool, stateCheckName)
		if err != nil || ok {
			return err
		}
		_, err = pool.Exec(ctx, stateCheckSQL)
		return err
	})
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
// or DROP ... IF EXISTS, so concurrent instances starting together are safe.
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
	return ensureStateCheck(ctx, pool)
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
	return schemaRetry(ctx, "migration "+name, func() error {
		_, err := pool.Exec(ctx, string(b))
		return err
	})
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
