package sqlstore_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/schollz/progressbar/v3"

	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/sqlstore"
)

// The growth benchmark's preloaded records look like traffic: spread over
// growthActors actors (so over every shard), four endpoints, states in
// the proportions below, and creation and expiry times spread over a
// 30-day retention. Record i's key is growthKey(i), so a benchmark can
// replay any of them.
const growthActors = 10007

var growthEndpoints = [...]string{"POST /v1/payments", "POST /v1/refunds", "POST /v1/payouts", "POST /v1/transfers"}

func growthActor(i int) string    { return fmt.Sprintf("tenant/g%d", i%growthActors) }
func growthEndpoint(i int) string { return growthEndpoints[(i/growthActors)%len(growthEndpoints)] }
func growthKey(i int) string      { return fmt.Sprintf("pre-%d", i) }

// growthCycle is the retention the preloaded records' creation times
// spread over: record i was created growthAge(i) ago.
const growthCycle = 30 * 24 * time.Hour

// growthAge is how long before the load record i was created: i mod 30
// days, in seconds, so every 30-day cycle of indexes holds records of
// every age, one a second.
func growthAge(i int) time.Duration {
	return time.Duration(i%int(growthCycle/time.Second)) * time.Second
}

// growthInFlight is how recent an in-flight record is: work under a live
// lease was claimed moments ago (a handler runs for seconds), so only
// records created in the last minutes are IN_PROGRESS.
const growthInFlight = 10 * time.Minute

// growthState: 90 % COMPLETED, 5 % TERMINAL_FAILURE, 2 % RETRYABLE_FAILURE,
// 1 % OUTCOME_UNKNOWN, and 2 % IN_PROGRESS (under a live lease: a retry
// gets 409) among the records created in the last growthInFlight; older
// records of that 2 % completed long ago.
func growthState(i int) string {
	switch m := i % 100; {
	case m < 90:
		return "COMPLETED"
	case m < 95:
		return "TERMINAL_FAILURE"
	case m < 97:
		return "RETRYABLE_FAILURE"
	case m < 99:
		if growthAge(i) < growthInFlight {
			return "IN_PROGRESS"
		}
		return "COMPLETED"
	default:
		return "OUTCOME_UNKNOWN"
	}
}

// growthOpID is a preloaded record's operation id: time-ordered (UUIDv7)
// from the record's creation time, as the store makes them, with the
// other 74 bits random.
func growthOpID(created time.Time) uuid.UUID {
	id := uuid.New()
	ms := uint64(created.UnixMilli())
	for b := range 6 {
		id[b] = byte(ms >> (40 - 8*b))
	}
	id[6] = 0x70 | id[6]&0x0f
	return id
}

var growthCols = []string{"actor_scope", "endpoint", "key_hash", "operation_id", "fingerprint", "fingerprint_version",
	"state", "version", "lease_owner", "lease_expires_at", "attempts", "last_stage", "shard", "epoch",
	"response_status", "response_headers", "response_body", "body_omitted", "resource_id", "error_summary",
	"purged", "created_at", "updated_at", "expires_at"}

// loadGrowth fills s's records table with n records by COPY, with the
// secondary indexes and the primary key dropped during the copy and built
// afterwards (minutes for tens of millions, where row-by-row index
// maintenance takes hours), then VACUUM ANALYZE, as a table of that age
// would be. Progress goes to progress.
func loadGrowth(tb testing.TB, s *sqlstore.Store, n int, fp []byte, fpVersion int, progress io.Writer) {
	ctx := context.Background()
	conn, err := s.Pool().Acquire(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Release()
	exec := func(q string) {
		if _, err := conn.Exec(ctx, q); err != nil {
			tb.Fatalf("%s: %v", q, err)
		}
	}
	var defs []string
	rows, err := conn.Query(ctx, `SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'idempotency_records'
		AND indexname <> 'idempotency_records_pkey'`)
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			tb.Fatal(err)
		}
		names, defs = append(names, name), append(defs, def)
	}
	rows.Close()
	var pk string
	if err := conn.QueryRow(ctx, `SELECT pg_get_constraintdef(oid) FROM pg_constraint
		WHERE conname = 'idempotency_records_pkey'`).Scan(&pk); err != nil {
		tb.Fatal(err)
	}
	for _, name := range names {
		exec(`DROP INDEX ` + name)
	}
	exec(`ALTER TABLE idempotency_records DROP CONSTRAINT idempotency_records_pkey`)

	bar := progressbar.NewOptions64(int64(n), progressbar.OptionSetWriter(progress),
		progressbar.OptionSetDescription(fmt.Sprintf("COPY %d records", n)), progressbar.OptionShowCount(),
		progressbar.OptionShowIts(), progressbar.OptionSetItsString("rows"),
		progressbar.OptionThrottle(250*time.Millisecond), progressbar.OptionClearOnFinish())
	now := time.Now()
	headers := `{"Content-Type":["application/json"]}`
	body := []byte(`{"id":"pay_0000000000000000","object":"payment","amount":1250,"currency":"EUR","status":"succeeded","created":1764590000}`)
	i := 0
	_, err = conn.Conn().CopyFrom(ctx, pgx.Identifier{"idempotency_records"}, growthCols, pgx.CopyFromFunc(func() ([]any, error) {
		if i >= n {
			return nil, nil
		}
		if i%10000 == 0 {
			bar.Set(i)
		}
		actor, st := growthActor(i), growthState(i)
		h := sha256.Sum256([]byte(growthKey(i)))
		created := now.Add(-growthAge(i))
		row := []any{actor, growthEndpoint(i), h[:], growthOpID(created), fp, fpVersion, st, int64(2), "", nil, int32(1), "",
			int32(shard.Of(actor, shard.DefaultCount)), int64(1), nil, nil, nil, false, nil, nil, false,
			created, created, created.Add(growthCycle)}
		switch st {
		case "COMPLETED", "TERMINAL_FAILURE":
			row[14], row[15], row[16], row[18] = int32(201), headers, body, "pay_1"
		case "IN_PROGRESS":
			row[8], row[9], row[7] = "preload/"+uuid.NewString(), now.Add(24*time.Hour), int64(1)
		case "RETRYABLE_FAILURE", "OUTCOME_UNKNOWN":
			row[19] = "upstream timeout"
		}
		i++
		return row, nil
	}))
	if err != nil {
		tb.Fatalf("copy: %v", err)
	}
	bar.Finish()
	fmt.Fprintf(progress, "copied %d records; building the primary key and %d indexes\n", n, len(defs))
	exec(`SET maintenance_work_mem = '512MB'`)
	exec(`ALTER TABLE idempotency_records ADD ` + pk)
	for _, def := range defs {
		exec(def)
	}
	fmt.Fprintln(progress, "VACUUM ANALYZE")
	exec(`VACUUM (ANALYZE) idempotency_records`)
}
