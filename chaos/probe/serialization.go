package probe

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcoord/idemcoord/chaos/history"
)

// ErrNoConflict is returned by Serialization when the two transactions did
// not collide: the probe observed no 40001.
var ErrNoConflict = errors.New("probe: no serialization failure observed")

const probeSchema = `CREATE TABLE IF NOT EXISTS chaos_probe (id INT8 NOT NULL PRIMARY KEY, n INT8 NOT NULL);
INSERT INTO chaos_probe (id, n) VALUES (1, 0) ON CONFLICT (id) DO NOTHING`

// Serialization provokes one serialization failure and retries through it,
// as the store's whole-transaction retry does: two SERIALIZABLE
// transactions read the same probe row, the first updates it and commits,
// the second's update then fails with SQLSTATE 40001, and the second is
// re-run from BEGIN and commits. It records history.ProbeRetry40001 when
// both the 40001 and the committed retry were seen. pool needs two free
// connections; the probe table (chaos_probe) is created if missing.
func Serialization(ctx context.Context, pool *pgxpool.Pool, rec *history.Recorder) (history.Operation, error) {
	call := rec.Now()
	if _, err := pool.Exec(ctx, probeSchema); err != nil {
		return history.Operation{}, fmt.Errorf("probe: schema: %w", err)
	}
	serializable := pgx.TxOptions{IsoLevel: pgx.Serializable}
	t1, err := pool.BeginTx(ctx, serializable)
	if err != nil {
		return history.Operation{}, fmt.Errorf("probe: begin: %w", err)
	}
	defer t1.Rollback(ctx)
	t2, err := pool.BeginTx(ctx, serializable)
	if err != nil {
		return history.Operation{}, fmt.Errorf("probe: begin: %w", err)
	}
	defer t2.Rollback(ctx)
	var n int64
	// Both take their snapshot before either writes.
	for _, tx := range []pgx.Tx{t1, t2} {
		if err := tx.QueryRow(ctx, `SELECT n FROM chaos_probe WHERE id = 1`).Scan(&n); err != nil {
			return history.Operation{}, fmt.Errorf("probe: read: %w", err)
		}
	}
	if _, err := t1.Exec(ctx, `UPDATE chaos_probe SET n = n + 1 WHERE id = 1`); err != nil {
		return history.Operation{}, fmt.Errorf("probe: first write: %w", err)
	}
	if err := t1.Commit(ctx); err != nil {
		return history.Operation{}, fmt.Errorf("probe: first commit: %w", err)
	}
	_, err = t2.Exec(ctx, `UPDATE chaos_probe SET n = n + 1 WHERE id = 1`)
	if err == nil {
		err = t2.Commit(ctx) // CockroachDB may report the conflict at COMMIT
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "40001" {
		return history.Operation{}, fmt.Errorf("%w (second transaction: %v)", ErrNoConflict, err)
	}
	// The whole-transaction retry: a new BEGIN, so a new snapshot.
	err = pgx.BeginTxFunc(ctx, pool, serializable, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE chaos_probe SET n = n + 1 WHERE id = 1`)
		return err
	})
	if err != nil {
		return history.Operation{}, fmt.Errorf("probe: retry after 40001: %w", err)
	}
	return rec.Add(history.Operation{Kind: history.KindProbe, Probe: history.ProbeRetry40001, Call: call,
		Return: rec.Now(), Shard: -1, Detail: "40001 on the second writer, whole-transaction retry committed"}), nil
}
