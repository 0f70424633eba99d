package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/fencing"
)

// MoveFences applies moves as MoveFence applies each, in one serializable
// transaction: one UPDATE of every fence holding its move's m.From, one
// repair_audit row (action "move_fence") per fence it moved, and one read
// of the others. It returns one error per move, in order: nil when the
// move was applied (now or before: a fence already holding (m.From+1,
// m.To) is success and writes no second audit row), else
// *fencing.MoveConflictError, or the transaction's error for every move
// (then none was applied). A region's failover moves about a hundred
// fences per call, one transaction instead of a hundred on a pool shared
// with the requests. Drain moves are not batched: a move with m.Drain
// gets an error (use MoveFence). The shards must be distinct.
func (s *Store) MoveFences(ctx context.Context, moves []fencing.Move) []error {
	errs := make([]error, len(moves))
	if len(moves) == 0 {
		return errs
	}
	shards := make([]int32, len(moves))
	froms := make([]int64, len(moves))
	tos := make([]string, len(moves))
	at := map[int]int{}
	for i, m := range moves {
		switch {
		case m.From < 1 || strings.TrimSpace(m.To) == "":
			return fill(errs, fmt.Errorf("sqlstore: move fence %s: epoch must be at least 1 and the target region set", m))
		case m.Drain:
			return fill(errs, fmt.Errorf("sqlstore: move fence %s: a draining move is not batched", m))
		}
		if err := checkOperator(m.Operator, m.Reason); err != nil {
			return fill(errs, err)
		}
		if _, dup := at[m.Shard]; dup {
			return fill(errs, fmt.Errorf("sqlstore: move fences: shard %d twice", m.Shard))
		}
		at[m.Shard] = i
		shards[i], froms[i], tos[i] = int32(m.Shard), m.From, m.To
	}
	var conflicts map[int]*fencing.MoveConflictError
	// Idempotent: the re-run sees our moves (already applied) or applies them.
	err := s.do(ctx, "tx", rerunnable, func(ctx context.Context) error {
		return s.txOnce(ctx, func(tx pgx.Tx) error {
			conflicts = map[int]*fencing.MoveConflictError{}
			rows, err := tx.Query(ctx, `UPDATE shard_fences f SET epoch = u.f + 1, owner_region = u.t,
				updated_at = COALESCE($4::TIMESTAMPTZ, now())
				FROM unnest($1::INT4[], $2::INT8[], $3::TEXT[]) AS u(s, f, t)
				WHERE f.shard = u.s AND f.epoch = u.f RETURNING f.shard`, shards, froms, tos, s.now())
			if err != nil {
				return err
			}
			movedShards, err := pgx.CollectRows(rows, pgx.RowTo[int32])
			if err != nil {
				return err
			}
			moved := make(map[int]bool, len(movedShards))
			var ids, ops, reasons, details []string
			for _, sh := range movedShards {
				m := moves[at[int(sh)]]
				moved[m.Shard] = true
				ids, ops = append(ids, uuid.NewString()), append(ops, m.Operator)
				reasons, details = append(reasons, m.Reason), append(details, m.String())
			}
			if len(ids) > 0 {
				if _, err := tx.Exec(ctx, `INSERT INTO repair_audit (id, at, operator, action, reason, operation_id, actor_scope, detail)
					SELECT u.id, COALESCE($1::TIMESTAMPTZ, now()), u.op, 'move_fence', u.reason, NULL, '', u.detail
					FROM unnest($2::UUID[], $3::TEXT[], $4::TEXT[], $5::TEXT[]) AS u(id, op, reason, detail)`,
					s.now(), ids, ops, reasons, details); err != nil {
					return err
				}
			}
			if len(moved) == len(moves) {
				return nil
			}
			var rest []int32
			for _, m := range moves {
				if !moved[m.Shard] {
					rest = append(rest, int32(m.Shard))
					conflicts[m.Shard] = &fencing.MoveConflictError{Move: m} // no fence row: epoch 0
				}
			}
			rows, err = tx.Query(ctx, `SELECT shard, epoch, owner_region FROM shard_fences WHERE shard = ANY($1::INT4[])`, rest)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var (
					sh    int32
					epoch int64
					owner string
				)
				if err := rows.Scan(&sh, &epoch, &owner); err != nil {
					return err
				}
				m := moves[at[int(sh)]]
				if epoch == m.Epoch() && owner == m.To {
					delete(conflicts, m.Shard) // already applied, by us or by the mover we roll forward
					continue
				}
				conflicts[m.Shard].Epoch, conflicts[m.Shard].Owner = epoch, owner
			}
			return rows.Err()
		})
	})
	if err != nil {
		return fill(errs, fmt.Errorf("sqlstore: move %d fences: %w", len(moves), err))
	}
	for i, m := range moves {
		if c, ok := conflicts[m.Shard]; ok {
			errs[i] = c
		}
	}
	return errs
}

// fill sets every element of errs to err and returns errs.
func fill(errs []error, err error) []error {
	for i := range errs {
		errs[i] = err
	}
	return errs
}
