package sqlstore_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/sqlstore"
)

// schemaVariant is the records table changed one way (the change is a
// measurement: the store's migrations make none of them).
type schemaVariant struct{ name, ddl string }

// dropChecks drops the records table's check constraint (the states and
// the lease rule, one check since migration 0009).
const dropChecks = `ALTER TABLE idempotency_records DROP CONSTRAINT idempotency_records_rules`

// schemaVariants are the schema's candidate costs for a first run: its
// check constraint, which PostgreSQL reads back from the catalog's text
// form and plans again on every insert and update; the same rules as the
// two checks of before migration 0009; and each secondary index.
var schemaVariants = []schemaVariant{
	{"as migrated", ""},
	{"without the check constraint", dropChecks},
	{"the same rules as two checks (before migration 0009)", dropChecks + `;
		ALTER TABLE idempotency_records ADD CONSTRAINT idempotency_records_states CHECK (state IN
			('PENDING', 'IN_PROGRESS', 'COMPLETED', 'RETRYABLE_FAILURE', 'TERMINAL_FAILURE', 'OUTCOME_UNKNOWN', 'CANCELLED')),
		ADD CONSTRAINT idempotency_records_lease CHECK (lease_expires_at IS NOT NULL OR state NOT IN ('PENDING', 'IN_PROGRESS'))`},
	{"without the operation-id index", `DROP INDEX idempotency_records_operation_id`},
	{"without the expiry index", `DROP INDEX idempotency_records_expiry`},
}

// schemaVariantOps returns, per schema variant, the store's own claim and
// finish statements sent raw (rawFirstRun) on a store changed that way;
// the peer's first run comes first.
func schemaVariantOps(b testing.TB, filler int) (*benchEnv, []costVariant) {
	ctx := context.Background()
	var first *benchEnv
	var vs []costVariant
	for _, v := range schemaVariants {
		e := newBenchEnv(b, filler)
		if first == nil {
			first = e
			vs = append(vs, costVariant{"peer upsert+update, read committed", peerPair(b, e).raw})
		}
		if v.ddl != "" {
			if _, err := e.s.Pool().Exec(ctx, v.ddl); err != nil {
				b.Fatalf("%s: %v", v.name, err)
			}
		}
		vs = append(vs, costVariant{v.name, rawFirstRun(b, e, e.s.Pool(), sqlstore.ClaimSQL, sqlstore.FinishSQL, uuid.New)})
	}
	return first, vs
}

// BenchmarkFirstRunSchemaSplit measures what the records table's shape
// costs a first run: the store's two statements raw on each variant of
// schemaVariants, in interleaved rounds against the peer's first run, 16
// clients, with throughput relative to the peer's and CPU per first run
// split Go / PostgreSQL (every backend of the server; the other stores'
// pools sit idle meanwhile).
//
//	go test ./sqlstore -run '^$' -bench FirstRunSchemaSplit -benchtime 8000x
func BenchmarkFirstRunSchemaSplit(b *testing.B) {
	e, vs := schemaVariantOps(b, benchFiller)
	runVariants(b, e, vs)
}

// TestFirstRunSchemaVariantsRun runs every schema variant a few times, so
// a changed statement or migration breaks the tests, not the next
// benchmark run.
func TestFirstRunSchemaVariantsRun(t *testing.T) {
	_, vs := schemaVariantOps(t, 100)
	for _, v := range vs {
		for range 3 {
			if err := v.op(); err != nil {
				t.Fatalf("%s: %v", v.name, err)
			}
		}
	}
}
