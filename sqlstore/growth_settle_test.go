package sqlstore_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// settleGrowth brings the loaded stores to where a serving database
// would be before anything is measured: the load's writes checkpointed
// and flushed to disk (a bulk load leaves gigabytes of dirty pages whose
// write-back would otherwise compete with the measured reads), and, with
// warm, what a sized server that has been serving traffic keeps in
// memory: every index of the records (pg_prewarm into shared_buffers,
// the primary key last, since first runs insert on random leaves of it)
// and the records of the last hour, which retries and in-flight work
// touch. The uniform "replay" path still reads cold heap pages.
func settleGrowth(tb testing.TB, envs []*growthEnv, warm bool, progress io.Writer) {
	ctx := context.Background()
	for _, e := range envs {
		if _, err := e.s.Pool().Exec(ctx, "CHECKPOINT"); err != nil {
			tb.Fatalf("checkpoint: %v", err)
		}
	}
	start := time.Now()
	syscall.Sync()
	fmt.Fprintf(progress, "checkpointed and flushed in %s\n", time.Since(start).Round(time.Second))
	if !warm {
		return
	}
	for _, e := range envs {
		start := time.Now()
		pool := e.s.Pool()
		if _, err := pool.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_prewarm"); err != nil {
			tb.Fatalf("pg_prewarm: %v", err)
		}
		var pages int64
		if err := pool.QueryRow(ctx, `SELECT coalesce(sum(pg_prewarm(indexrelid)), 0) FROM (
			SELECT indexrelid FROM pg_index WHERE indrelid = 'idempotency_records'::regclass
			ORDER BY indisprimary, indexrelid) i`).Scan(&pages); err != nil {
			tb.Fatalf("prewarm the indexes: %v", err)
		}
		n := warmRecent(tb, e, time.Hour)
		fmt.Fprintf(progress, "%d records: prewarmed %d index pages and the last hour's %d records in %s\n",
			e.size, pages, n, time.Since(start).Round(time.Second))
	}
}

// warmRecent reads every preloaded record of e created within window of
// the load by primary key, and returns how many it read.
func warmRecent(tb testing.TB, e *growthEnv, window time.Duration) int {
	ctx := context.Background()
	cycle, w := int(growthCycle/time.Second), int(window/time.Second)
	n := 0
	b := &pgx.Batch{}
	flush := func() {
		if b.Len() == 0 {
			return
		}
		if err := e.s.Pool().SendBatch(ctx, b).Close(); err != nil {
			tb.Fatalf("warm the recent records: %v", err)
		}
		b = &pgx.Batch{}
	}
	for c := 0; c*cycle < e.size; c++ {
		for i := c * cycle; i < c*cycle+w && i < e.size; i++ {
			h := sha256.Sum256([]byte(growthKey(i)))
			b.Queue(`SELECT 1 FROM idempotency_records WHERE actor_scope = $1 AND endpoint = $2 AND key_hash = $3`,
				growthActor(i), growthEndpoint(i), h[:])
			n++
			if b.Len() == 1000 {
				flush()
			}
		}
	}
	flush()
	return n
}
