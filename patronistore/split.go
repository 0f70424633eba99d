package patronistore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Splitting a cluster moves some of its shards to another cluster, with
// their records, queued requests and fences, under the fence
// (docs/store.md, "Splitting a cluster"). For each shard:
//
//  1. Fence off on the source: its fence row's owner becomes
//     "moved:"+owner (epoch kept; no token names such a region, so it
//     admits nobody, and a re-run still knows the owner), in a transaction that takes the row's lock, so every claim
//     or update that held it FOR SHARE has committed before, and every
//     later one there is refused (a shard without an owner admits
//     nobody). From here the shard's writes fail until step 3 commits:
//     the gateway answers them 503 + Retry-After, as during an ownership
//     move.
//  2. Copy the shard's records and queued requests to the destination,
//     and give the destination's fence row the source's epoch and owner,
//     in one transaction there (a re-run after a failure inserts nothing
//     twice and finds the fence already set).
//  3. Route the shard to the destination: this Store at once; other
//     processes when their store.patroni map says so. A process still on
//     the old map writes to the source, whose fence refuses it: the map
//     can roll out instance by instance.
//  4. Delete the shard's rows on the source (its fence stays without an
//     owner).
//
// Ownership (etcd's epoch and owner) does not change: tokens issued
// before the move are admitted by the destination's fence.

// movedPrefix marks the source's fence of a shard moved away.
const movedPrefix = "moved:"

// ErrNotSource means a shard to move is not routed to the source cluster.
var ErrNotSource = errors.New("patronistore: shard is not on the source cluster")

// MoveShards moves shards from their cluster to cluster to, under the
// fence, audited on both clusters by operator and reason. Every shard
// must be on one source cluster. It is resumable: run again after a
// failure, it finishes what the last run began.
func (s *Store) MoveShards(ctx context.Context, operator, reason string, shards []int, to int) error {
	if len(shards) == 0 {
		return nil
	}
	if to < 0 || to >= len(s.clusters) {
		return fmt.Errorf("patronistore: move shards: no cluster %d", to)
	}
	from := s.ClusterOf(shards[0])
	for _, n := range shards {
		if n < 0 || s.ClusterOf(n) != from {
			return fmt.Errorf("%w: shard %d", ErrNotSource, n)
		}
	}
	if from == to {
		return nil
	}
	src, dst := s.clusters[from].Store, s.clusters[to].Store
	nums := make([]int32, len(shards))
	for i, n := range shards {
		nums[i] = int32(n)
	}
	detail := fmt.Sprintf("shards=%d first=%d from=%s to=%s", len(shards), shards[0], s.clusters[from].Name, s.clusters[to].Name)

	// 1. Fence off on the source, reading the fences it held.
	type fence struct {
		shard int32
		epoch int64
		owner string
	}
	var fences []fence
	err := src.RunTx(ctx, func(tx pgx.Tx) error {
		fences = fences[:0]
		rows, err := tx.Query(ctx, `SELECT shard, epoch, owner_region FROM shard_fences WHERE shard = ANY($1) ORDER BY shard FOR UPDATE`, nums)
		if err != nil {
			return err
		}
		for rows.Next() {
			var f fence
			if err := rows.Scan(&f.shard, &f.epoch, &f.owner); err != nil {
				rows.Close()
				return err
			}
			fences = append(fences, f)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE shard_fences SET owner_region = $2 || owner_region, updated_at = now()
			WHERE shard = ANY($1) AND owner_region <> '' AND owner_region NOT LIKE $2 || '%'`, nums, movedPrefix); err != nil {
			return err
		}
		return src.AuditTx(ctx, tx, operator, "move_shards_out", reason, detail)
	})
	if err != nil {
		return fmt.Errorf("patronistore: move shards: fence off on %s: %w", s.clusters[from].Name, err)
	}
	// The fences as they were (a re-run reads them back from the prefix).
	epochs, owners := make([]int64, 0, len(fences)), make([]string, 0, len(fences))
	have := make([]int32, 0, len(fences))
	for _, f := range fences {
		if owner := strings.TrimPrefix(f.owner, movedPrefix); owner != "" {
			have, epochs, owners = append(have, f.shard), append(epochs, f.epoch), append(owners, owner)
		}
	}

	// 2. Copy records, queued requests and fences, in one transaction.
	err = dst.RunTx(ctx, func(tx pgx.Tx) error {
		var recs, reqs []byte
		if err := src.Pool().QueryRow(ctx, `SELECT COALESCE(json_agg(r), '[]') FROM idempotency_records r WHERE shard = ANY($1)`,
			nums).Scan(&recs); err != nil {
			return err
		}
		if err := src.Pool().QueryRow(ctx, `SELECT COALESCE(json_agg(q), '[]') FROM async_requests q
			WHERE q.operation_id IN (SELECT operation_id FROM idempotency_records WHERE shard = ANY($1))`, nums).Scan(&reqs); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO idempotency_records SELECT * FROM json_populate_recordset(NULL::idempotency_records, $1)
			ON CONFLICT DO NOTHING`, recs); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO async_requests SELECT * FROM json_populate_recordset(NULL::async_requests, $1)
			ON CONFLICT DO NOTHING`, reqs); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO shard_fences (shard, epoch, owner_region)
			SELECT u.s, u.e, u.o FROM unnest($1::INT4[], $2::INT8[], $3::TEXT[]) AS u(s, e, o)
			ON CONFLICT (shard) DO UPDATE SET epoch = excluded.epoch, owner_region = excluded.owner_region, updated_at = now()
			WHERE shard_fences.owner_region = ''`, have, epochs, owners); err != nil {
			return err
		}
		return dst.AuditTx(ctx, tx, operator, "move_shards_in", reason, detail)
	})
	if err != nil {
		return fmt.Errorf("patronistore: move shards: copy to %s: %w", s.clusters[to].Name, err)
	}

	// 3. Route here.
	s.reroute(shards, to)

	// 4. Delete on the source (its fence keeps no owner).
	err = src.RunTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM async_requests
			WHERE operation_id IN (SELECT operation_id FROM idempotency_records WHERE shard = ANY($1))`, nums); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM idempotency_records WHERE shard = ANY($1)`, nums)
		return err
	})
	if err != nil {
		return fmt.Errorf("patronistore: move shards: moved, but the copies on %s remain (run again): %w", s.clusters[from].Name, err)
	}
	return nil
}
