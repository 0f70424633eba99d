package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// cancelCond is what a record must still be, besides its version, lease
// owner and fence, for a cancel to take: not terminal, and its last stage
// reversible or none reported yet. A stage is stored in
// idempotency.Stage.String's form.
const cancelCond = `state IN ('PENDING', 'IN_PROGRESS', 'RETRYABLE_FAILURE', 'OUTCOME_UNKNOWN')
	AND (last_stage = '' OR last_stage LIKE '%` + idempotency.ReversibleParam + `')`

// Cancel records the cancellation of an async operation that the upstream
// has confirmed it cancelled (the upstream decides the race between its
// own irreversible step and the cancel): CANCELLED, with res.Snapshot as
// the answer every retry of the original request replays from then on.
//
// rec is the record as the caller read it, for the caller's actor (Lookup).
// The update is fenced by tok (the shard's current epoch and owner region)
// and conditioned on rec's version and lease owner, on the record not
// being terminal and on its last stage being reversible (see Cancellable),
// in one serializable transaction that also drops the operation's stored
// async request: no recovery takes over a cancelled operation. A worker
// still running it then finds its lease gone: its result, heartbeat or
// stage cannot overwrite the cancel, and one whose answer was lost is not
// taken for applied (the cancel leaves its own writer identity as the
// lease owner, otherSet): the worker gets ErrLostOwnership.
//
// It returns ErrNotCancellable when rec itself is not cancellable,
// ErrLostOwnership when the record moved on since it was read (read it
// again and decide again), *fencing.StaleEpochError when tok is stale,
// and *AmbiguousCommitError when the commit's outcome was lost (read
// again: the record is CANCELLED or as it was).
func (s *Store) Cancel(ctx context.Context, rec store.Record, tok fencing.Token, res store.Result) error {
	if ok, _ := store.Cancellable(rec); !ok {
		return store.ErrNotCancellable
	}
	if res.State != idempotency.Cancelled {
		return fmt.Errorf("sqlstore: cancel: state must be %s, got %s", idempotency.Cancelled, res.State)
	}
	if err := idempotency.Transition(rec.State, res.State); err != nil {
		return fmt.Errorf("sqlstore: cancel: %w", err)
	}
	status, headers, body, resourceID, errSummary, err := snapshotArgs(res)
	if err != nil {
		return err
	}
	l, w := leaseOf(rec, tok), writerID("cancel")
	u := s.prepareUpdate(l, w, "cancel", otherSet, cancelCond,
		string(res.State), status, headers, body, res.Snapshot.BodyOmitted, resourceID, errSummary, l.TTL.Milliseconds(), w)
	var ok bool
	err = s.RunTx(ctx, func(tx pgx.Tx) error {
		var err error
		if ok, err = u.run(ctx, s, tx); err != nil || !ok {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM async_requests WHERE operation_id = $1`, rec.OperationID)
		return err
	})
	var stale *fencing.StaleEpochError
	if errors.As(err, &stale) {
		return err
	}
	if err != nil {
		return fmt.Errorf("sqlstore: cancel: %w", err)
	}
	return s.owned(ctx, l, "cancel", ok, nil)
}
