package ownership

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/internal/retry"
)

// maxBatch bounds the shards of one batched etcd transaction: etcd
// refuses a transaction of more than --max-txn-ops operations (default
// 128) or comparisons, and each shard costs one of each; the rest is left
// for guards (a controller's failover carries two).
const maxBatch = 100

// batchConcurrency bounds the batches of one MoveBatch in flight at once:
// a region's failover (about a third of the shards) is four batches of
// 1024 shards, all at once; a larger move keeps etcd's load bounded.
const batchConcurrency = 4

// Planned is one move of a MoveBatch: a shard as the caller read it
// (Entry, with its ModRevision), to region To, ending in Final. When Entry
// is FENCING and To and Final are not that transfer's own, the move is
// made from the transfer's outcome: the transfer is finished first, then
// the shard moves on (see FromEpoch).
type Planned struct {
	Entry Entry
	To    string
	Final State
}

// MoveBatch makes the moves of plans as Move does, each only from the
// entry as read (Entry.ModRevision, so the caller's read is the one
// decided on) and with opts, and returns one entry and one error per
// plan, in order. It is Move's protocol for many shards at once: one etcd
// transaction per up to maxBatch shards puts them in FENCING (a
// compare-and-swap on every mod revision, plus the guards), then the SQL
// fences of every batch move in one store call when the store is a
// FenceBatcher (else concurrency at a time), then one transaction per
// batch makes the fenced ones final. That is two etcd round trips per
// hundred shards and one SQL transaction in all, instead of three and one
// per shard; and the batches' etcd transactions run side by side (at most
// batchConcurrency), so the moves take about one batch's time. Each shard
// still goes FENCING, fenced, final in that order. A plan whose entry is FENCING, a move that drains, and every
// shard of a batch whose transaction fails a comparison (the shard
// changed since it was read, or a guard no longer holds) go through Move,
// shard by shard, which re-reads and decides as it always does; after
// ErrGuardFailed the moves not yet started are not tried. The batched
// writes ride out transient etcd failures as Move's do (batchTxn); a
// batch whose retries ran out is not redone shard by shard (each would
// spend a budget of its own on an etcd that is down): its shards get
// that error and are left for their next move to roll forward.
func (d *Directory) MoveBatch(ctx context.Context, plans []Planned, operator, reason string, concurrency int,
	opts ...MoveOption) ([]Entry, []error) {
	var o moveOptions
	for _, f := range opts {
		f(&o)
	}
	out, errs := make([]Entry, len(plans)), make([]error, len(plans))
	var single, batch []int
	for i, p := range plans {
		if p.Entry.State == Fencing || o.drain > 0 || p.To == "" || !p.Final.final() || p.Entry.ModRevision == 0 ||
			(p.Entry.Owner == p.To && p.Entry.State == p.Final) {
			single = append(single, i)
		} else {
			batch = append(batch, i)
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, max(1, concurrency))
	each := func(idx []int, fn func(i int)) {
		var wg sync.WaitGroup
		for _, i := range idx {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = context.Cause(ctx)
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				fn(i)
				if errors.Is(errs[i], ErrGuardFailed) {
					cancel(errs[i])
				}
			}()
		}
		wg.Wait()
	}
	one := func(i int) {
		p := plans[i]
		// A plan on a FENCING entry is that transfer itself (its target
		// and final state: from the epoch it retires), or a move from its
		// outcome (from the epoch it installs), which Move makes once it
		// has finished the transfer.
		from := p.Entry.Epoch
		if t := p.Entry.Transfer; t != nil && p.To == p.Entry.Owner && p.Final == t.Final {
			from = t.FromEpoch
		}
		out[i], errs[i] = d.Move(ctx, p.Entry.Shard, p.To, p.Final, operator, reason,
			append([]MoveOption{FromEpoch(from)}, opts...)...)
	}
	// The batches go in three steps, each batch's etcd transactions side
	// by side (at most batchConcurrency at a time): every batch to
	// FENCING; then the SQL fences of every fenced shard in one store
	// call; then every batch to final. One store call, not one per batch:
	// each batch's transaction scans the small fence table whole, so at
	// SERIALIZABLE concurrent ones abort each other (a 40001 and a re-run
	// for all but one of four batches, measured on PostgreSQL), and a
	// failover's moves waited for those re-runs. Each shard still goes
	// FENCING, fenced, final in that order; only different shards' steps
	// overlap, as concurrent Moves' do.
	var (
		mu      sync.Mutex
		fenced  = map[int]Entry{} // every fenced shard's FENCING entry, by plan
		batches [][]int           // the batches that went to FENCING
	)
	// fenceChunk puts one batch (at most maxBatch plans) in FENCING in one
	// etcd transaction; a batch that cannot go through whole goes shard
	// by shard (one), all three steps.
	fenceChunk := func(chunk []int) {
		f, ok, err := d.fenceBatch(ctx, plans, chunk, operator, reason, o)
		if gaveUp(err) {
			// etcd failed past its budget: going shard by shard would
			// spend a budget per shard. Whatever was applied is rolled
			// forward by the next move of each shard.
			for _, i := range chunk {
				errs[i] = err
			}
			return
		}
		if err != nil || !ok {
			// A comparison failed, or the answer was lost (the batch may
			// have committed): Move re-reads each shard and rolls forward
			// or reports what it finds.
			each(chunk, one)
			return
		}
		if err := d.step(stepFencing); err != nil {
			for _, i := range chunk {
				errs[i] = err // the mover stops here, as if it died
			}
			return
		}
		mu.Lock()
		maps.Copy(fenced, f)
		batches = append(batches, chunk)
		mu.Unlock()
	}
	// finalChunk makes a fenced batch's shards whose SQL fence moved
	// final in one etcd transaction.
	finalChunk := func(chunk []int) {
		var done []int
		for _, i := range chunk {
			if errs[i] == nil {
				done = append(done, i)
			}
		}
		if len(done) == 0 {
			return
		}
		switch ok, err := d.finalBatch(ctx, fenced, done, o, out); {
		case gaveUp(err):
			for _, i := range done {
				errs[i] = err // left FENCING, fenced: the next move finishes it
			}
		case !ok:
			each(done, func(i int) { out[i], errs[i] = d.finishCAS(ctx, fenced[i], o) })
		}
	}
	var chunks [][]int
	for start := 0; start < len(batch); start += maxBatch {
		chunks = append(chunks, batch[start:min(start+maxBatch, len(batch))])
	}
	d.eachChunk(ctx, chunks, errs, fenceChunk)
	var all []int
	for _, chunk := range batches {
		all = append(all, chunk...)
	}
	if len(all) > 0 {
		d.fenceSQLBatch(ctx, fenced, all, sem, errs, each)
	}
	d.eachChunk(ctx, batches, errs, finalChunk)
	each(single, one)
	return out, errs
}

// eachChunk runs fn on every chunk, at most batchConcurrency at a time;
// once ctx ends, the chunks not started get its cause in errs.
func (d *Directory) eachChunk(ctx context.Context, chunks [][]int, errs []error, fn func(chunk []int)) {
	sem := make(chan struct{}, batchConcurrency)
	var wg sync.WaitGroup
	for _, chunk := range chunks {
		select {
		case sem <- struct{}{}:
			if ctx.Err() == nil {
				break
			}
			<-sem
			fillErr(errs, chunk, context.Cause(ctx))
			continue
		case <-ctx.Done():
			fillErr(errs, chunk, context.Cause(ctx))
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			fn(chunk)
		}()
	}
	wg.Wait()
}

// fenceBatch puts the chunk's shards in FENCING in one transaction. It
// reports false, changing nothing, when a comparison failed.
func (d *Directory) fenceBatch(ctx context.Context, plans []Planned, chunk []int, operator, reason string,
	o moveOptions) (map[int]Entry, bool, error) {
	cmps := o.startGuards()
	var puts []clientv3.Op
	fenced := make(map[int]Entry, len(chunk))
	for _, i := range chunk {
		p := plans[i]
		e := p.Entry
		k := shardKey(d.prefix, e.Shard)
		fen := Entry{Shard: e.Shard, Owner: p.To, Epoch: e.Epoch + 1, State: Fencing, Transfer: &Transfer{
			FromOwner: e.Owner, FromEpoch: e.Epoch, FromState: e.State, Final: p.Final, Operator: operator, Reason: reason,
		}}
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", e.ModRevision))
		puts = append(puts, clientv3.OpPut(k, fen.encode()))
		fenced[i] = fen
	}
	resp, err := d.batchTxn(ctx, stepStartBatch, cmps, puts)
	if err != nil {
		return nil, false, fmt.Errorf("ownership: fence %d shards: %w", len(chunk), err)
	}
	if !resp.Succeeded {
		return nil, false, nil
	}
	for i, fen := range fenced {
		fen.ModRevision = resp.Header.Revision
		fenced[i] = fen
	}
	d.log.InfoContext(ctx, "shards fencing", "shards", len(chunk), "operator", operator, "reason", reason,
		"revision", resp.Header.Revision)
	return fenced, true, nil
}

// fenceSQL is step 3 of one fenced shard (Move's finish, without the
// etcd write).
func (d *Directory) fenceSQL(ctx context.Context, fen Entry) error {
	m := fenceMove(fen)
	return d.fenced(m, d.fences.MoveFence(ctx, m))
}

// fenceMove is the SQL fence move of a fenced shard's transfer.
func fenceMove(fen Entry) fencing.Move {
	t := fen.Transfer
	return fencing.Move{Shard: fen.Shard, From: t.FromEpoch, To: fen.Owner, Operator: t.Operator, Reason: t.Reason}
}

// fenced is step 3's outcome for m, whose fence move returned err: a
// fence that holds another epoch leaves the shard FENCING
// (ErrFenceDiverged), another error is the move's, nil is the step done.
func (d *Directory) fenced(m fencing.Move, err error) error {
	switch {
	case errors.Is(err, fencing.ErrMoveConflict):
		return fmt.Errorf("%w: shard %d stays FENCING: %w", ErrFenceDiverged, m.Shard, err)
	case err != nil:
		return fmt.Errorf("ownership: fence %s: %w", m, err)
	}
	return d.step(stepFenced)
}

// FenceBatcher is a FenceStore that also moves many fences in one call
// (sqlstore.Store.MoveFences: one transaction): MoveBatch moves each
// batch's fences with it. MoveFences returns one error per move, in
// order, as MoveFence would for each (nil: applied, now or before).
type FenceBatcher interface {
	MoveFences(ctx context.Context, moves []fencing.Move) []error
}

// fenceSQLBatch is step 3 of the chunk's fenced shards: one MoveFences
// call (one store connection, from sem) when the store is a FenceBatcher,
// else fenceSQL of each shard, concurrently through each.
func (d *Directory) fenceSQLBatch(ctx context.Context, fenced map[int]Entry, chunk []int, sem chan struct{},
	errs []error, each func([]int, func(int))) {
	fb, ok := d.fences.(FenceBatcher)
	if !ok {
		each(chunk, func(i int) { errs[i] = d.fenceSQL(ctx, fenced[i]) })
		return
	}
	moves := make([]fencing.Move, len(chunk))
	for j, i := range chunk {
		moves[j] = fenceMove(fenced[i])
	}
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		fillErr(errs, chunk, context.Cause(ctx))
		return
	}
	got := fb.MoveFences(ctx, moves)
	<-sem
	for j, i := range chunk {
		errs[i] = d.fenced(moves[j], got[j])
	}
}

// fillErr sets errs[i] to err for every i of idx.
func fillErr(errs []error, idx []int, err error) {
	for _, i := range idx {
		errs[i] = err
	}
}

// finalBatch makes the fenced shards done final in one transaction, and
// reports whether it committed (filling out).
func (d *Directory) finalBatch(ctx context.Context, fenced map[int]Entry, done []int, o moveOptions, out []Entry) (bool, error) {
	cmps := append([]clientv3.Cmp{}, o.guards...)
	var puts []clientv3.Op
	for _, i := range done {
		fen := fenced[i]
		k := shardKey(d.prefix, fen.Shard)
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", fen.ModRevision))
		puts = append(puts, clientv3.OpPut(k, Entry{Shard: fen.Shard, Owner: fen.Owner, Epoch: fen.Epoch,
			State: fen.Transfer.Final}.encode()))
	}
	resp, err := d.batchTxn(ctx, stepFinishBatch, cmps, puts)
	if err != nil {
		return false, fmt.Errorf("ownership: finish %d shards: %w", len(done), err)
	}
	if !resp.Succeeded {
		return false, nil
	}
	for _, i := range done {
		fen := fenced[i]
		out[i] = Entry{Shard: fen.Shard, Owner: fen.Owner, Epoch: fen.Epoch, State: fen.Transfer.Final,
			ModRevision: resp.Header.Revision}
	}
	d.log.InfoContext(ctx, "shards moved", "shards", len(done), "revision", resp.Header.Revision)
	return true, nil
}

// batchTxn commits one batched transaction of MoveBatch, run again after
// a transient etcd failure within retry.Default.Etcd. A run after one
// whose outcome was unknown fails its comparisons if the first was
// applied; the caller then goes shard by shard, and each shard's move
// re-reads it and recognises the transfer (or its end) as its own.
func (d *Directory) batchTxn(ctx context.Context, step string, cmps []clientv3.Cmp, puts []clientv3.Op) (*clientv3.TxnResponse, error) {
	var resp *clientv3.TxnResponse
	err := d.etcdLoop(step, -1).Do(ctx, step, transientEtcd, func(ctx context.Context) error {
		var err error
		resp, err = d.cli.Txn(ctx).If(cmps...).Then(puts...).Commit()
		return err
	})
	return resp, err
}

// gaveUp reports whether err is a retry loop's giving up on etcd.
func gaveUp(err error) bool {
	var ex *retry.ExhaustedError
	return errors.As(err, &ex)
}

// finishCAS is step 4 of one fenced shard, as Move's finish does it.
// Every mover finishing the transfer writes the same entry, so finding it
// (written by another mover, or by this one's attempt whose answer a
// transient etcd failure hid) is success.
func (d *Directory) finishCAS(ctx context.Context, fen Entry, o moveOptions) (Entry, error) {
	done := Entry{Shard: fen.Shard, Owner: fen.Owner, Epoch: fen.Epoch, State: fen.Transfer.Final}
	return d.cas(ctx, stepFinish, fen, done, o.guards, func(now Entry, _ bool) bool { return now.same(done) })
}
