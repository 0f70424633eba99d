package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/store"
)

// ShardCount returns the shard count recorded by BootstrapFences, or
// ErrNotBootstrapped.
func (s *Store) ShardCount(ctx context.Context) (int, error) {
	ctx, done := s.call(ctx) // a deadline for every statement: a frozen primary keeps its connections open
	defer done()
	var n int
	err := s.pool.QueryRow(ctx, `SELECT shards FROM shard_config WHERE id = 1`).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("sqlstore: no shard fences: %w", store.ErrNotBootstrapped)
	}
	if err != nil {
		return 0, fmt.Errorf("sqlstore: read shard count: %w", err)
	}
	return n, nil
}

// Fences returns the fence rows of shards 0 .. ShardCount()-1, ordered by
// shard: what etcd's directory and the Go hash must agree with. It returns
// no rows when the store is not bootstrapped. (Migration 0001 leaves
// unowned rows for shards 0..1023; those past the count are not returned.)
func (s *Store) Fences(ctx context.Context) ([]store.FenceRow, error) {
	ctx, done := s.call(ctx) // a deadline for every statement: a frozen primary keeps its connections open
	defer done()
	rows, err := s.pool.Query(ctx, `SELECT f.shard, f.epoch, f.owner_region
		FROM shard_fences AS f, shard_config AS c
		WHERE c.id = 1 AND f.shard < c.shards ORDER BY f.shard`)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: read fences: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.FenceRow, error) {
		var f store.FenceRow
		err := r.Scan(&f.Shard, &f.Epoch, &f.Owner)
		return f, err
	})
}

// BootstrapFences gives every shard an owner. It records shards as the
// store's shard count (or returns *ShardCountMismatchError if another count
// is recorded), creates the missing fence rows 0..shards-1 at epoch 1 owned
// by home(shard), and gives the unowned epoch-1 rows that migration 0001
// left their home owner. It never changes a row that has an owner, so it is
// safe to run on every start of every instance, concurrently.
func (s *Store) BootstrapFences(ctx context.Context, shards int, home func(shard int) string) error {
	return s.BootstrapOwnFences(ctx, shards, home, nil)
}

// BootstrapOwnFences is BootstrapFences for the shards mine accepts only
// (every shard when mine is nil): a store that holds some of the shards
// (one cluster of the patroni backend) gives an owner to its own, and
// leaves the others without one, so a shard routed to the wrong cluster
// admits nobody there.
func (s *Store) BootstrapOwnFences(ctx context.Context, shards int, home func(shard int) string, mine func(shard int) bool) error {
	if shards < 1 {
		return fmt.Errorf("sqlstore: bootstrap: shard count must be at least 1, got %d", shards)
	}
	if home == nil {
		return errors.New("sqlstore: bootstrap: home must be set")
	}
	nums := make([]int32, 0, shards)
	owners := make([]string, 0, shards)
	for i := range shards {
		if mine != nil && !mine(i) {
			continue
		}
		nums, owners = append(nums, int32(i)), append(owners, home(i))
		if strings.TrimSpace(home(i)) == "" {
			return fmt.Errorf("sqlstore: bootstrap: shard %d has no home region", i)
		}
	}
	// Idempotent: running it again settles an ambiguous commit.
	err := s.do(ctx, "tx", rerunnable, func(ctx context.Context) error {
		return s.txOnce(ctx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO shard_config (id, shards) VALUES (1, $1)
				ON CONFLICT (id) DO NOTHING`, shards); err != nil {
				return err
			}
			var stored int
			if err := tx.QueryRow(ctx, `SELECT shards FROM shard_config WHERE id = 1`).Scan(&stored); err != nil {
				return err
			}
			if stored != shards {
				return &store.ShardCountMismatchError{Store: stored, Configured: shards}
			}
			_, err := tx.Exec(ctx, `INSERT INTO shard_fences (shard, epoch, owner_region)
				SELECT u.s, 1, u.o FROM unnest($1::INT4[], $2::TEXT[]) AS u(s, o)
				ON CONFLICT (shard) DO UPDATE SET owner_region = excluded.owner_region, updated_at = now()
				WHERE shard_fences.owner_region = '' AND shard_fences.epoch = 1`, nums, owners)
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("sqlstore: bootstrap fences: %w", err)
	}
	return nil
}

// rerunnable is what runs an idempotent transaction again: a serialization
// failure, or an ambiguous commit, which the re-run settles (it sees its
// own write, or applies it).
func rerunnable(err error) bool {
	return retryable(err) || errors.As(err, new(*store.AmbiguousCommitError))
}

// MoveFence applies one ownership move to the shard's fence: a
// compare-and-swap that sets epoch m.From+1 and owner m.To only where the
// fence holds epoch m.From, with a repair_audit row (action "move_fence")
// in the same serializable transaction. The UPDATE conflicts with every
// claim and update holding the row FOR SHARE: those either commit before
// the move or fail and see the new epoch.
//
// It is idempotent: if the fence already holds (m.From+1, m.To), it returns
// nil and writes no second audit row, so a mover that died after this step
// is rolled forward by the next. Any other state returns
// *fencing.MoveConflictError (errors.Is fencing.ErrMoveConflict) and
// changes nothing. With m.Drain, a shard that still has operations in
// flight at m.From returns fencing.ErrNotDrained and changes nothing. A
// lost connection during the commit is resolved inside by running the move
// again.
func (s *Store) MoveFence(ctx context.Context, m fencing.Move) error {
	if m.From < 1 || strings.TrimSpace(m.To) == "" {
		return fmt.Errorf("sqlstore: move fence %s: epoch must be at least 1 and the target region set", m)
	}
	if err := checkOperator(m.Operator, m.Reason); err != nil {
		return err
	}
	var (
		conflict   *fencing.MoveConflictError
		notDrained bool
	)
	// Idempotent: the re-run sees our move or applies it.
	err := s.do(ctx, "tx", rerunnable, func(ctx context.Context) error {
		return s.txOnce(ctx, func(tx pgx.Tx) error {
			conflict, notDrained = nil, false
			q := `UPDATE shard_fences SET epoch = $2, owner_region = $3,
				updated_at = COALESCE($5::TIMESTAMPTZ, now()) WHERE shard = $1 AND epoch = $4`
			if m.Drain {
				// Serializable: a claim that commits in between either is
				// seen here or makes this transaction (or itself) retry.
				q += ` AND NOT EXISTS (SELECT 1 FROM idempotency_records r WHERE r.shard = $1 AND r.epoch = $4
					AND r.state IN ('PENDING', 'IN_PROGRESS') AND r.lease_expires_at > COALESCE($5::TIMESTAMPTZ, now()))`
			}
			tag, err := tx.Exec(ctx, q, m.Shard, m.Epoch(), m.To, m.From, s.now())
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 1 {
				return s.audit(ctx, tx, m.Operator, "move_fence", m.Reason, nil, "", m.String())
			}
			cur := fencing.MoveConflictError{Move: m}
			err = tx.QueryRow(ctx, `SELECT epoch, owner_region FROM shard_fences WHERE shard = $1`, m.Shard).
				Scan(&cur.Epoch, &cur.Owner)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			if err == nil && cur.Epoch == m.Epoch() && cur.Owner == m.To {
				return nil // already applied, by us or by the mover we roll forward
			}
			if err == nil && m.Drain && cur.Epoch == m.From {
				notDrained = true
				return nil
			}
			conflict = &cur
			return nil
		})
	})
	switch {
	case err != nil:
		return fmt.Errorf("sqlstore: move fence %s: %w", m, err)
	case conflict != nil:
		return conflict
	case notDrained:
		return fmt.Errorf("sqlstore: move fence %s: %w", m, fencing.ErrNotDrained)
	}
	return nil
}
