package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Group commit (statement combining). A first run costs the database
// mostly per statement, not per row: executor start, the fence's lock and
// join, the SERIALIZABLE commit, the system calls of a round trip
// (docs/capacity.md, "First run against a single-region peer"). Under
// load, the claims (and separately the finishes) that arrive while
// MaxInFlight statements of their kind are already running wait, and the
// next free slot sends them as one statement over unnest arrays, every
// row fenced, conditioned and answered on its own. At low load nothing
// changes: a request that finds a free slot runs the single statement, as
// it always did. No timer: a request never waits for company, only for a
// slot.
//
// A batch shares its fate, never its answers: a member the batch did not
// settle (its row not inserted or not updated, or any error of the batch
// statement) runs its own single statement with its own retry budget; an
// ambiguous batch commit is settled by each member on its own, as the
// single path settles its own (claims recognise their insert by
// lease_owner, finishes re-read version and owner).

// GroupCommit configures statement combining for the claim and the finish
// (Config.GroupCommit). The zero value stands for DefaultGroupCommit (Open
// and DefaultConfig give it), so a store opened from a Config that leaves
// it out batches as production does; GroupCommitOff (MaxBatch 1) turns it
// off.
type GroupCommit struct {
	// MaxInFlight is how many statements of one kind (claims; finishes)
	// run at once before further requests of that kind queue for a batch.
	// It must be at least 1 when MaxBatch is above 1.
	MaxInFlight int
	// MaxBatch is the most requests one batch statement carries. 1 turns
	// batching off: every request runs its own statement at once (0 too,
	// when another field is set; an all-zero GroupCommit is the default).
	MaxBatch int
	// FullBatchSlots is how many statements of a kind beyond MaxInFlight
	// full batches may run: once MaxBatch requests wait, they go at once
	// if fewer than MaxInFlight+FullBatchSlots statements of their kind
	// run, instead of waiting for one to end. A request never runs alone
	// on such a slot, so it adds overlap without adding statements.
	FullBatchSlots int
	// MaxQueueWait bounds how long a request waits in the queue for a
	// slot: past it the request's batch goes on a slot of its own. A slot's
	// statement that stalls (a lock held by a long transaction, a network
	// that stopped answering) then delays the requests queued behind it by
	// at most this much, never for its whole length. 0 waits for a slot
	// however long it takes. It does not bound a batch already sent: its
	// members wait for its slowest row, as that row's request would alone.
	MaxQueueWait time.Duration
	// GrowSlots is how many batch statements of a kind beyond
	// MaxInFlight+FullBatchSlots may run when the queue grows: once
	// GrowQueue requests wait, they go at once as one batch if fewer than
	// MaxInFlight+FullBatchSlots+GrowSlots statements of their kind run.
	// Like a full batch's slot, it never runs a request alone by choice, so
	// it adds overlap (the claims of one batch are sent while another's
	// commit is still being written) without adding lone statements. 0
	// turns it off.
	GrowSlots int
	// GrowQueue is how many waiting requests open a GrowSlots slot; 0
	// stands for MaxBatch (only full batches take a grow slot). Lower
	// sends smaller batches sooner: more statements, less waiting.
	GrowQueue int
}

// DefaultGroupCommit is DefaultConfig's GroupCommit, tuned with
// BenchmarkFirstRunVsPeer on two cores (docs/capacity.md, "Group
// commit"): one statement of each kind in flight, eight requests at most
// in one, and one more for a full batch. A second ordinary slot sends
// more statements alone (the first request after a batch finds the slot
// free), and larger batches let the clients fall into one convoy whose
// claims and finishes no longer overlap.
//
// MaxQueueWait is well above a statement's usual time (a few
// milliseconds; tens across regions on CockroachDB) and well below what a
// client notices.
//
// GrowSlots is 0 (off): in the measurements of 2026-12-07
// (docs/capacity.md, "Adaptive group commit (2026-12-07)") two grow
// slots were level or ahead with fsync on and a quiet machine, but behind
// with fsync off under CPU load, where more batches at once cost more
// PostgreSQL CPU per first run (their transactions share-lock the same
// fence rows). Set it where commits wait on a disk or a replica.
var DefaultGroupCommit = GroupCommit{MaxInFlight: 1, MaxBatch: 8, FullBatchSlots: 1, MaxQueueWait: 50 * time.Millisecond}

// GroupCommitOff is the GroupCommit that turns group commit off: every
// claim and finish runs its own statement at once (MaxBatch 1). For
// comparisons and tests of the single-statement path; production runs
// with DefaultGroupCommit.
var GroupCommitOff = GroupCommit{MaxBatch: 1}

// maxBatchLimit bounds GroupCommit.MaxBatch: one statement's arrays.
const maxBatchLimit = 1000

// enabled reports whether g batches at all.
func (g GroupCommit) enabled() bool { return g.MaxBatch > 1 }

// validate reports g's invalid fields, named as in configuration.
func (g GroupCommit) validate() []error {
	var errs []error
	if g.MaxBatch < 0 || g.MaxBatch > maxBatchLimit {
		errs = append(errs, fmt.Errorf("group_commit.max_batch: must be between 0 (off) and %d, got %d", maxBatchLimit, g.MaxBatch))
	}
	if g.FullBatchSlots < 0 {
		errs = append(errs, fmt.Errorf("group_commit.full_batch_slots: must not be negative, got %d", g.FullBatchSlots))
	}
	if g.GrowSlots < 0 {
		errs = append(errs, fmt.Errorf("group_commit.grow_slots: must not be negative, got %d", g.GrowSlots))
	}
	if g.GrowQueue < 0 || g.GrowQueue == 1 || (g.GrowQueue > g.MaxBatch && g.MaxBatch > 1) {
		errs = append(errs, fmt.Errorf("group_commit.grow_queue: must be 0 (max_batch) or between 2 and max_batch (%d), got %d", g.MaxBatch, g.GrowQueue))
	}
	if g.MaxQueueWait < 0 {
		errs = append(errs, fmt.Errorf("group_commit.max_queue_wait: must not be negative (0 waits for a slot however long), got %s", g.MaxQueueWait))
	}
	if g.MaxInFlight < 0 {
		errs = append(errs, fmt.Errorf("group_commit.max_in_flight: must not be negative, got %d", g.MaxInFlight))
	} else if g.enabled() && g.MaxInFlight == 0 {
		errs = append(errs, errors.New("group_commit.max_in_flight: must be at least 1 when group_commit.max_batch is above 1"))
	}
	return errs
}

// member is one request waiting in a combiner: its request (T), its key
// (no two members with one key share a batch; with grow slots on, a
// queued member is not sent while a statement of its kind carrying its
// key runs) and, once
// its batch ran, its result (set by the batch's runner before wake is
// signalled).
type member[T any] struct {
	key  memberKey
	req  T
	wake chan struct{}
	// Set under the combiner's lock when taken into a batch.
	taken bool
	// lead is the batch this member runs, set for a batch's first member.
	lead []*member[T]
}

// combiner is the group commit of one statement kind. Its zero value is
// unusable; a nil *combiner never batches.
//
// With grow slots on (GroupCommit.GrowSlots), a batch never carries a
// key that a running statement of its kind carries (alone or in another
// batch): such a member stays in the queue,
// ahead of its key's later members, until that statement ends. So the
// slots beyond MaxInFlight (full batches, GrowSlots) add overlap between
// keys, never between two requests of one key, and a key's queued
// requests go to the database in the order they came, one statement at a
// time. (A request that finds one of the MaxInFlight slots free runs at
// once, as it did before batching, whatever else carries its key.)
type combiner[T any] struct {
	maxInFlight, maxBatch, fullBatchSlots int
	growSlots, growQueue                  int
	maxQueueWait                          time.Duration
	// run sends batch (two members or more) as one statement and sets
	// every member's result. ctx is the leader's, detached from its
	// cancellation.
	run func(ctx context.Context, batch []*member[T])

	mu    sync.Mutex
	busy  int
	queue []*member[T]
	// running counts, per key, the running statements that carry it.
	running map[memberKey]int
}

func newCombiner[T any](g GroupCommit, run func(context.Context, []*member[T])) *combiner[T] {
	if !g.enabled() {
		return nil
	}
	grow := g.GrowQueue
	if grow == 0 {
		grow = g.MaxBatch
	}
	return &combiner[T]{maxInFlight: g.MaxInFlight, maxBatch: g.MaxBatch, fullBatchSlots: g.FullBatchSlots,
		growSlots: g.GrowSlots, growQueue: grow, maxQueueWait: g.MaxQueueWait, run: run,
		running: make(map[memberKey]int)}
}

// alone takes a free slot for a request of key, if one of the
// MaxInFlight slots is free: the request then runs its own single
// statement at once and calls leave with key. A nil combiner (batching
// off) always answers true.
func (c *combiner[T]) alone(key memberKey) bool {
	if c == nil {
		return true
	}
	c.mu.Lock()
	if c.busy < c.maxInFlight {
		c.busy++
		c.running[key]++
		c.mu.Unlock()
		return true
	}
	c.mu.Unlock()
	return false
}

// join enters m. It returns alone=true when m holds a slot and must run
// its own single statement, then call leave with its key. Otherwise m's
// batch has run and its result is in m's request, or err is ctx's error:
// m left the queue before a batch took it. A member taken into a batch
// always waits for the batch's answer: the batch runs on a context its
// members' cancellations do not cut, bounded by the store's per-call
// budget.
func (c *combiner[T]) join(ctx context.Context, m *member[T]) (alone bool, err error) {
	if c == nil {
		return true, nil
	}
	c.mu.Lock()
	if c.busy < c.maxInFlight {
		c.busy++
		c.running[m.key]++
		c.mu.Unlock()
		return true, nil
	}
	m.wake = wakes.Get().(chan struct{})
	c.queue = append(c.queue, m)
	if c.sendNow() {
		c.busy++
		c.handOff()
	} else {
		c.mu.Unlock()
	}
	err = c.await(ctx, m)
	// m's wake is empty now, and nothing sends on it again: a member is
	// woken once (taken into a batch, or handed a slot), and await has
	// received that; a member that left the queue untaken was never sent
	// to. So it goes back to the pool for another member.
	wakes.Put(m.wake)
	m.wake = nil
	if err != nil {
		return false, err
	}
	switch len(m.lead) {
	case 0:
		return false, nil // a member of another's batch: the answer is in m
	case 1:
		return true, nil // alone after all: the single statement, on the slot handed over
	}
	c.run(context.WithoutCancel(ctx), m.lead)
	for _, o := range m.lead[1:] {
		o.wake <- struct{}{}
	}
	c.mu.Lock()
	for _, o := range m.lead {
		c.done(o.key)
	}
	c.next()
	return false, nil
}

// sendNow reports whether the queue goes as a batch at once, on a slot
// beyond MaxInFlight (c.mu held): it holds a full batch and a full
// batch's slot is free (GroupCommit.FullBatchSlots), or it grew to
// GrowQueue and a grow slot is free (GroupCommit.GrowSlots).
func (c *combiner[T]) sendNow() bool {
	switch n := len(c.queue); {
	case n >= c.maxBatch && c.busy < c.maxInFlight+c.fullBatchSlots:
		return true
	case c.growSlots > 0 && n >= c.growQueue && c.busy < c.maxInFlight+c.fullBatchSlots+c.growSlots:
		return true
	}
	return false
}

// await waits until m is woken (taken into a batch, or handed a slot),
// or leaves the queue when ctx ends first. Every MaxQueueWait that m still
// waits untaken, the batch at the head of the queue goes on a slot of its
// own, whatever the slots' statements are doing.
func (c *combiner[T]) await(ctx context.Context, m *member[T]) error {
	var (
		escape <-chan time.Time
		t      *time.Timer
	)
	if c.maxQueueWait > 0 {
		t = queueTimers.Get().(*time.Timer)
		t.Reset(c.maxQueueWait)
		defer func() {
			t.Stop() // (Go 1.23 on: nothing stale is left in t.C for its next user)
			queueTimers.Put(t)
		}()
		escape = t.C
	}
	for {
		select {
		case <-m.wake:
			return nil
		case <-escape:
			c.mu.Lock()
			if m.taken {
				c.mu.Unlock()
			} else {
				c.busy++
				c.handOff()
			}
			t.Reset(c.maxQueueWait)
		case <-ctx.Done():
			c.mu.Lock()
			if !m.taken {
				c.remove(m)
				c.mu.Unlock()
				return notSent{ctx.Err()}
			}
			c.mu.Unlock()
			<-m.wake
			return nil
		}
	}
}

// wakes recycles the members' wake channels (buffered, one slot, empty
// when put back; see join): a channel per queued request was an
// allocation of every batched claim and finish.
var wakes = sync.Pool{New: func() any { return make(chan struct{}, 1) }}

// queueTimers recycles await's timers: a timer per queued request was two
// allocations of every batched claim and finish.
var queueTimers = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}

// leave ends the single statement of a request join let run alone (key
// is its member's): it frees the slot, handing it to the next batch of
// queued members, whose first member runs it.
func (c *combiner[T]) leave(key memberKey) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.done(key)
	c.next()
}

// done marks that a statement carrying key ended (c.mu held).
func (c *combiner[T]) done(key memberKey) {
	if n := c.running[key]; n > 1 {
		c.running[key] = n - 1
	} else {
		delete(c.running, key)
	}
}

// next frees the slot of a statement that ended (c.mu held; it unlocks
// it): the queue's next batch takes it, if any.
func (c *combiner[T]) next() {
	if len(c.queue) == 0 {
		c.busy--
		c.mu.Unlock()
		return
	}
	c.handOff()
}

// handOff takes the next batch off the queue (c.mu held, a slot taken
// for it; it unlocks c.mu) and hands it, with the slot, to its first
// member; when the queue still holds a grown batch and a slot is free for
// it (sendNow), that one goes too. A member whose key is already in the
// batch, or in a statement that runs, stays in the queue, ahead of later
// members of its key; when every queued member is such, the slot is
// given back (the statement carrying their key hands it on when it ends).
func (c *combiner[T]) handOff() {
	first := c.take()
	var second []*member[T]
	if first == nil {
		c.busy--
	} else if c.sendNow() {
		c.busy++
		if second = c.take(); second == nil {
			c.busy--
		}
	}
	c.mu.Unlock()
	for _, batch := range [2][]*member[T]{first, second} {
		if batch != nil {
			batch[0].lead = batch
			batch[0].wake <- struct{}{}
		}
	}
}

// carried reports whether m's key may not go in batch now (c.mu held):
// batch carries it already (a statement cannot write one row twice), or,
// with grow slots on, a running statement of this kind carries it (so
// the slots beyond the first never send one key's requests side by side
// or out of order). Without grow slots a key's queued requests go as
// they did before the grow slots: one per batch, and a request whose
// MaxQueueWait ran out goes on a slot of its own whatever runs, so a
// thousand retries of one key do not queue behind each other one
// statement at a time.
func (c *combiner[T]) carried(batch []*member[T], key memberKey) bool {
	if c.growSlots > 0 {
		return c.running[key] > 0
	}
	for _, o := range batch {
		if o.key == key {
			return true
		}
	}
	return false
}

// take removes the next batch from the queue and marks its keys running
// (c.mu held); nil when no queued member may go.
func (c *combiner[T]) take() []*member[T] {
	var batch []*member[T]
	rest := c.queue[:0]
	for _, m := range c.queue {
		if len(batch) == c.maxBatch || c.carried(batch, m.key) {
			rest = append(rest, m)
			continue
		}
		if batch == nil {
			batch = make([]*member[T], 0, min(len(c.queue), c.maxBatch))
		}
		c.running[m.key]++
		m.taken = true
		batch = append(batch, m)
	}
	clear(c.queue[len(rest):])
	c.queue = rest
	return batch
}

// remove drops m from the queue; c.mu is held.
func (c *combiner[T]) remove(m *member[T]) {
	if i := slices.Index(c.queue, m); i >= 0 {
		c.queue = slices.Delete(c.queue, i, i+1)
	}
}

// notSent is the error of a request that left the queue before any
// statement carried it: nothing can have committed, so it is never judged
// ambiguous (pgconn.SafeToRetry).
type notSent struct{ err error }

func (e notSent) Error() string     { return "sqlstore: left the group commit's queue: " + e.err.Error() }
func (e notSent) Unwrap() error     { return e.err }
func (e notSent) SafeToRetry() bool { return true }

// GroupCommit returns the group commit the store runs with (its
// Config.GroupCommit as Open completed it, GroupCommitOff when off).
func (s *Store) GroupCommit() GroupCommit {
	if s.claims == nil {
		return GroupCommitOff
	}
	return s.cfg.GroupCommit
}
