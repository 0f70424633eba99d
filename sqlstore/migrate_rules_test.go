package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/sqlstore"
)

// The constraints of the records table's rules: one since migration 0009,
// two before (0001's lease rule and 0006's list of seven states).
const (
	rulesCheck = "idempotency_records_rules"
	oldStates  = "idempotency_records_states"
	oldLease   = "idempotency_records_lease"
)

// checkRules asserts that pool's records table holds its rules in the one
// validated check, and that an update breaking either rule is refused
// while one keeping both is taken: each case updates the record with
// operation id op.
func checkRules(t *testing.T, pool *pgxpool.Pool, op uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	rows, err := pool.Query(ctx, `SELECT conname, convalidated FROM pg_constraint
		WHERE conrelid = 'idempotency_records'::regclass AND contype = 'c' ORDER BY conname`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var name string
		var valid bool
		if err := rows.Scan(&name, &valid); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s valid=%v", name, valid))
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if want := rulesCheck + " valid=true"; len(got) != 1 || got[0] != want {
		t.Errorf("check constraints = %q, want only %q", got, want)
	}
	lease := time.Now().Add(time.Hour)
	for _, c := range []struct {
		state string
		lease *time.Time
		ok    bool
	}{
		{"CANCELLING", nil, false}, // no such state
		{"BOGUS", &lease, false},
		{"IN_PROGRESS", nil, false}, // running without a lease
		{"PENDING", nil, false},
		{"IN_PROGRESS", &lease, true},
		{"PENDING", &lease, true},
		{"COMPLETED", nil, true},
		{"CANCELLED", nil, true},
		{"OUTCOME_UNKNOWN", &lease, true},
	} {
		_, err := pool.Exec(ctx, `UPDATE idempotency_records SET state = $1, lease_expires_at = $2
			WHERE operation_id = $3`, c.state, c.lease, op)
		var pe *pgconn.PgError
		switch {
		case c.ok && err != nil:
			t.Errorf("state %s, lease %v: %v, want accepted", c.state, c.lease != nil, err)
		case !c.ok && !(errors.As(err, &pe) && pe.Code == "23514"):
			t.Errorf("state %s, lease %v: %v, want a check violation (23514)", c.state, c.lease != nil, err)
		}
	}
}

// TestTheRulesCheckRefusesAnUnknownStateAndARunningRecordWithoutALease:
// after migration the records table's one check still refuses a state
// outside the seven and a PENDING or IN_PROGRESS record without a lease,
// as the two checks it replaced did.
func TestTheRulesCheckRefusesAnUnknownStateAndARunningRecordWithoutALease(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t, newClock())
	c, err := s.Begin(ctx, request(t, "tenant/alice", "k", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	checkRules(t, s.Pool(), c.Lease.OperationID)
}

// poolAt0008 returns a pool on a fresh database migrated as the store
// was before migration 0009 (0001 to 0008, and the seven-state check the
// Migrate of that time added), holding a record in each state, every
// running one with a lease; and the operation id of one of them.
func poolAt0008(t *testing.T) (*pgxpool.Pool, uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t, 8)
	for _, f := range []string{"0001_records.sql", "0003_async_requests.sql", "0004_shard_config.sql",
		"0005_drop_claim_function.sql", "0006_cancelled_state.sql", "0007_first_sent.sql", "0008_two_tiers.sql"} {
		if err := sqlstore.ApplyMigrationOnce(ctx, pool, f); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	if _, err := pool.Exec(ctx, `ALTER TABLE idempotency_records ADD CONSTRAINT `+oldStates+` CHECK (state IN
		('PENDING', 'IN_PROGRESS', 'COMPLETED', 'RETRYABLE_FAILURE', 'TERMINAL_FAILURE', 'OUTCOME_UNKNOWN', 'CANCELLED'))`); err != nil {
		t.Fatal(err)
	}
	var first uuid.UUID
	now := time.Now()
	for i, st := range []string{"PENDING", "IN_PROGRESS", "COMPLETED", "RETRYABLE_FAILURE", "TERMINAL_FAILURE", "OUTCOME_UNKNOWN", "CANCELLED"} {
		op := uuid.New()
		if i == 0 {
			first = op
		}
		var lease *time.Time
		if st == "PENDING" || st == "IN_PROGRESS" {
			lease = &now
		}
		if _, err := pool.Exec(ctx, `INSERT INTO idempotency_records (actor_scope, endpoint, key_hash, operation_id,
			fingerprint, fingerprint_version, state, version, lease_expires_at, shard, epoch, created_at, updated_at, expires_at)
			VALUES ('tenant/a', 'POST /v1/payments', $1, $2, '\x00', 1, $3, 1, $4, 7, 1, $5, $5, $5)`,
			[]byte(st), op, st, lease, now); err != nil {
			t.Fatalf("insert %s: %v", st, err)
		}
	}
	return pool, first
}

// TestMigratingAStoreAt0008WithRecordsKeepsThemUnderOneRulesCheck: a
// store migrated before 0009, holding records, migrates to the one check
// with every record kept, and the check enforces both old rules; a
// second Migrate changes nothing.
func TestMigratingAStoreAt0008WithRecordsKeepsThemUnderOneRulesCheck(t *testing.T) {
	ctx := context.Background()
	pool, op := poolAt0008(t)
	for range 2 {
		if err := sqlstore.Migrate(ctx, pool); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM idempotency_records`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 7 {
		t.Errorf("records after the migration = %d, want the 7 of before", n)
	}
	checkRules(t, pool, op)
}

// TestInstancesMigratingAStoreAt0008TogetherAllStart: instances starting
// together into a store migrated before 0009 all finish Migrate (those
// that find the new check added by another go on to validate it), and
// the store ends with the one check. An open reader holds the instances
// at 0009's ADD CONSTRAINT (or queued behind it) until all three wait.
func TestInstancesMigratingAStoreAt0008TogetherAllStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, op := poolAt0008(t)
	reader, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback(ctx)
	if _, err := reader.Exec(ctx, "SELECT count(*) FROM idempotency_records"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() { errs[i] = sqlstore.Migrate(ctx, pool) })
	}
	for waiting := 0; waiting < len(errs); {
		// An instance waits at 0009's ADD CONSTRAINT, or at an earlier
		// statement queued behind another instance's ADD CONSTRAINT.
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND datname = current_database()`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d instances wait for the reader's lock", waiting, len(errs))
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := reader.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("instance %d: Migrate = %v", i, err)
		}
	}
	checkRules(t, pool, op)
}
