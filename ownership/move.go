package ownership

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/fencing"
)

// Transfer steps, as passed to the test hook after each one.
const (
	stepFencing = "fencing" // etcd holds FENCING with the new epoch
	stepFenced  = "fenced"  // the SQL fence holds the new epoch and owner
)

// MoveOption adjusts one Move.
type MoveOption func(*moveOptions)

type moveOptions struct {
	guards    []clientv3.Cmp
	start     []clientv3.Cmp // guards of the write that starts a transfer only
	fromEpoch int64          // 0: whatever the shard holds
	drain     time.Duration  // 0: no draining
}

// drainPoll is how often a draining move looks again at the operations
// still in flight at the retiring epoch: short next to an upstream call.
const drainPoll = 50 * time.Millisecond

// DrainFor makes a planned move wait, after fencing the shard in etcd (so
// no gateway claims anything new for it) and before bumping the SQL fence,
// until no operation claimed at the retiring epoch is in flight, for at
// most d: the old owner then records the results of what it already
// started, and nothing is left to a takeover after its lease. After d the
// fence moves anyway; what is still in flight is taken over once its lease
// expired, through the resolve path. Default 0: no waiting (a failover:
// the old owner cannot finish anything).
func DrainFor(d time.Duration) MoveOption { return func(o *moveOptions) { o.drain = d } }

// FromEpoch makes the move apply only to the shard at epoch e: the caller
// decided on what it read at e, and a shard that moved since is a
// conflict, not something to move again. A caller that read the shard
// FENCING and decided on the outcome of that transfer (a failback of a
// shard a failover is still moving away) passes the epoch the transfer
// installs: Move finishes that transfer to its own target and then makes
// this move from it, in the same call. Default: move from whatever epoch
// the shard holds.
func FromEpoch(e int64) MoveOption { return func(o *moveOptions) { o.fromEpoch = e } }

// Guard adds comparisons every etcd write of the move must also satisfy,
// typically a controller's election key create revision
// (Liveness.Guard), so a mover that lost its lease cannot change
// ownership even if it still believes it may. Default none.
func Guard(cmps ...clientv3.Cmp) MoveOption {
	return func(o *moveOptions) { o.guards = append(o.guards, cmps...) }
}

// GuardStart adds comparisons that only the write starting a transfer
// (the shard's move to FENCING) must also satisfy, typically that the
// condition the caller decided on still holds (a failover's region has
// not registered again). Finishing a transfer, this one's or an
// interrupted one's, never depends on them: a shard is not left FENCING
// because the reason to start its move went away. Refused as
// ErrGuardFailed, like Guard. Default none.
func GuardStart(cmps ...clientv3.Cmp) MoveOption {
	return func(o *moveOptions) { o.start = append(o.start, cmps...) }
}

// Move transfers a shard to region to, ending in state final (Active for
// planned moves, drains and failbacks; FailedOver for failovers). It is
// the whole transfer protocol and is resumable and idempotent:
//
//  1. read the shard linearizably; if it is FENCING, finish that earlier
//     transfer first (steps 3 and 4 with its recorded target);
//  2. compare-and-swap the entry (on its mod revision) to FENCING with
//     epoch+1 and the target: from here nobody writes the shard;
//  3. bump the SQL fence from the old epoch to epoch+1 owned by to (a
//     compare-and-swap on the old epoch, audited; a no-op if done);
//  4. compare-and-swap the entry to final: the new owner may write.
//
// A mover that dies after step 2 or 3 leaves the shard FENCING with
// everything needed to finish; the next Move of that shard rolls it
// forward. Epochs only grow. The read and both etcd writes ride out a
// transient etcd failure (a request timed out, a leader change) within
// retry.Default.Etcd, a write recognising its own commit that the failure
// hid (see cas), so a busy etcd does not stop a move halfway; past that
// budget Move returns the error and the shard is left as a death at that
// step leaves it. The fence bump (step 3) settles its own ambiguous
// commits in the store, and is a no-op once applied.
//
// When the shard is already owned by to in state final, Move changes
// nothing and returns the entry. When another mover changes the shard
// concurrently, exactly one wins; the others get *fencing.MoveConflictError
// (errors.Is fencing.ErrMoveConflict) having changed nothing themselves
// (they may have finished the winner's transfer, which does not change its
// outcome). The exception is a caller that planned on that transfer's
// outcome (FromEpoch of the epoch it installs): it gets its own move made
// after the transfer is finished. ErrFenceDiverged means the SQL fence refused the recorded
// transfer; the shard stays FENCING.
func (d *Directory) Move(ctx context.Context, shard int, to string, final State, operator, reason string, opts ...MoveOption) (Entry, error) {
	var o moveOptions
	for _, f := range opts {
		f(&o)
	}
	if to == "" || !final.final() || shard < 0 {
		return Entry{}, fmt.Errorf("%w: shard %d to %q final %q", ErrBadMove, shard, to, final)
	}
	e, err := d.read(ctx, shard)
	if err != nil {
		return Entry{}, err
	}
	if e.State == Fencing {
		d.log.WarnContext(ctx, "finishing an interrupted shard transfer", "shard", shard, "to", e.Owner,
			"epoch", e.Epoch, "started_by", e.Transfer.Operator)
		done, err := d.finish(ctx, e, o)
		if err != nil {
			return Entry{}, err
		}
		if done.Owner == to && done.State == final && (o.fromEpoch == 0 || o.fromEpoch == e.Transfer.FromEpoch) {
			return done, nil // that transfer was this one
		}
		if o.fromEpoch != e.Epoch {
			return Entry{}, conflict(shard, e.Transfer.FromEpoch, to, operator, reason, done)
		}
		// The caller decided on this transfer's outcome (FromEpoch of
		// the epoch it installs): it is done, so carry on from there.
		e = done
	}
	if o.fromEpoch != 0 && e.Epoch != o.fromEpoch {
		if e.Epoch == o.fromEpoch+1 && e.Owner == to && e.State == final {
			return e, nil // this very move, already done
		}
		return Entry{}, conflict(shard, o.fromEpoch, to, operator, reason, e)
	}
	if e.Owner == to && e.State == final {
		return e, nil
	}
	fen := Entry{Shard: shard, Owner: to, Epoch: e.Epoch + 1, State: Fencing, Transfer: &Transfer{
		FromOwner: e.Owner, FromEpoch: e.Epoch, FromState: e.State, Final: final, Operator: operator, Reason: reason,
	}}
	want := fen
	fen, err = d.cas(ctx, stepStart, e, want, o.startGuards(), func(now Entry, ambiguous bool) bool {
		// After an answer lost in a transient failure: this very write,
		// applied, or this transfer already finished by another mover.
		return ambiguous && (now.same(want) || now.same(Entry{Shard: shard, Owner: to, Epoch: want.Epoch, State: final}))
	})
	if err != nil {
		return Entry{}, err
	}
	if fen.State != Fencing {
		return fen, nil // this move, applied and finished by another mover
	}
	d.log.InfoContext(ctx, "shard fencing", "shard", shard, "from", e.Owner, "to", to, "epoch", fen.Epoch,
		"operator", operator, "reason", reason)
	if err := d.step(stepFencing); err != nil {
		return Entry{}, err
	}
	return d.finish(ctx, fen, o)
}

// finish runs steps 3 and 4 of the transfer fen (an entry in FENCING).
func (d *Directory) finish(ctx context.Context, fen Entry, o moveOptions) (Entry, error) {
	t := fen.Transfer
	m := fencing.Move{Shard: fen.Shard, From: t.FromEpoch, To: fen.Owner, Operator: t.Operator, Reason: t.Reason}
	if err := d.moveFence(ctx, m, o); err != nil {
		if errors.Is(err, fencing.ErrMoveConflict) {
			return Entry{}, fmt.Errorf("%w: shard %d stays FENCING: %w", ErrFenceDiverged, fen.Shard, err)
		}
		return Entry{}, fmt.Errorf("ownership: fence %s: %w", m, err)
	}
	if err := d.step(stepFenced); err != nil {
		return Entry{}, err
	}
	got, err := d.finishCAS(ctx, fen, o)
	if err == nil {
		d.log.InfoContext(ctx, "shard moved", "shard", fen.Shard, "owner", got.Owner, "epoch", got.Epoch, "state", got.State)
	}
	return got, err
}

// moveFence bumps the SQL fence, first waiting for the retiring epoch's
// operations in flight to finish when the move drains.
func (d *Directory) moveFence(ctx context.Context, m fencing.Move, o moveOptions) error {
	if o.drain > 0 {
		deadline := d.clock.Now().Add(o.drain)
		m.Drain = true
		for {
			err := d.fences.MoveFence(ctx, m)
			if !errors.Is(err, fencing.ErrNotDrained) {
				return err
			}
			if !d.clock.Now().Before(deadline) {
				d.log.WarnContext(ctx, "operations still in flight after the drain timeout; fencing anyway",
					"shard", m.Shard, "epoch", m.From, "drain", o.drain)
				break
			}
			if err := clock.Sleep(ctx, d.clock, drainPoll); err != nil {
				return err
			}
		}
		m.Drain = false
	}
	return d.fences.MoveFence(ctx, m)
}

// startGuards are the comparisons of the write that starts a transfer.
func (o moveOptions) startGuards() []clientv3.Cmp {
	return append(append([]clientv3.Cmp{}, o.guards...), o.start...)
}

// cas replaces from (read at from.ModRevision) with to, and returns the
// entry the shard then holds: to with its new mod revision, or the entry
// accept takes for it. A lost race is *fencing.MoveConflictError naming
// what the shard holds now; a guard that no longer holds, ErrGuardFailed.
//
// A transient etcd failure (a request timed out, a leader change) may
// hide a committed write, so the write is run again, within
// retry.Default.Etcd: the compare on from's mod revision lets it through
// only if the shard is unchanged, and otherwise the transaction reads the
// shard, which accept (told whether an earlier attempt's outcome was
// unknown) may recognise as this write applied. Past the budget the
// error is returned; whatever was applied is rolled forward by the next
// Move.
func (d *Directory) cas(ctx context.Context, step string, from, to Entry, guards []clientv3.Cmp,
	accept func(now Entry, ambiguous bool) bool) (Entry, error) {
	var out Entry
	ambiguous := false
	err := d.etcdLoop(step, from.Shard).Do(ctx, step, transientEtcd, func(ctx context.Context) error {
		var err error
		out, err = d.casOnce(ctx, from, to, guards, func(now Entry) bool { return accept(now, ambiguous) })
		if transientEtcd(err) {
			ambiguous = true
		}
		return err
	})
	if err != nil {
		return Entry{}, err
	}
	return out, nil
}

// casOnce is one attempt of cas.
func (d *Directory) casOnce(ctx context.Context, from, to Entry, guards []clientv3.Cmp, accept func(now Entry) bool) (Entry, error) {
	k := shardKey(d.prefix, from.Shard)
	cmps := append([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(k), "=", from.ModRevision)}, guards...)
	resp, err := d.cli.Txn(ctx).If(cmps...).Then(clientv3.OpPut(k, to.encode())).Else(clientv3.OpGet(k)).Commit()
	if err != nil {
		return Entry{}, fmt.Errorf("ownership: write shard %d: %w", from.Shard, err)
	}
	if !resp.Succeeded {
		now := Entry{Shard: from.Shard}
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 1 {
			if kvs[0].ModRevision == from.ModRevision {
				return Entry{}, fmt.Errorf("%w: shard %d", ErrGuardFailed, from.Shard)
			}
			if e, err := decodeEntry(from.Shard, kvs[0].Value, kvs[0].ModRevision); err == nil {
				if accept(e) {
					return e, nil
				}
				now = e
			}
		}
		fromEpoch := from.Epoch
		if from.Transfer != nil {
			fromEpoch = from.Transfer.FromEpoch
		}
		return Entry{}, conflict(from.Shard, fromEpoch, to.Owner, "", "", now)
	}
	to.ModRevision = resp.Header.Revision
	return to, nil
}

// conflict builds the error of a lost race: the move from epoch to region
// to, refused because the shard holds now.
func conflict(shard int, from int64, to, operator, reason string, now Entry) error {
	return &fencing.MoveConflictError{
		Move:  fencing.Move{Shard: shard, From: from, To: to, Operator: operator, Reason: reason},
		Epoch: now.Epoch, Owner: now.Owner,
	}
}
