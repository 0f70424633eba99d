package ledger

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// Recorder is what the gateway calls when it holds or refuses a request
// because the request's shard is between owners or failed over. Note must
// not block and must not fail the request: the ledger is a record of the
// answer, not part of it.
type Recorder interface {
	Note(ev store.IncidentEvent)
}

// Sink writes incident events and the audit rows of store outages
// (store.Backend's writers; *sqlstore.Store).
type Sink interface {
	RecordIncidentEvents(ctx context.Context, events []store.IncidentEvent) error
	Audit(ctx context.Context, operator, action, reason, detail string) error
}

// Notes defaults, each bounding what the gateway spends on the ledger.
const (
	// DefaultNotesQueue is how many events wait for the store at most,
	// queued or kept through a store outage: a failover refuses each
	// retrying client once per key and epoch (the dedup below), so this is
	// thousands of distinct intents held in a second or two; past it
	// events are dropped and counted (Dropped), never waited for.
	DefaultNotesQueue = 4096
	// notesBatch is how many events one store write carries.
	notesBatch = 256
	// notesSeen bounds the keys remembered to write each (key, class,
	// epoch) once; the set is cleared when full, after which the store's
	// unique index still keeps one row per intent.
	notesSeen = 65536
	// notesWriteTimeout bounds one store write.
	notesWriteTimeout = 5 * time.Second
	// notesRetry is how long a failed write waits before it is tried
	// again, unless a store call of the gateway answers first (the end
	// of an outage wakes the writer at once). Writes are idempotent (one
	// row per key, class and epoch), so a retry never doubles a row.
	notesRetry = 5 * time.Second
)

// Notes is the gateway's Recorder: a bounded queue that writes events to
// a Sink in batches from one goroutine, which Close stops and waits for.
// Events the store could not take (it is down) are kept, up to the
// queue's capacity, and written once it answers again. Through Watch it
// also notices store outages and audits each window (outage.go).
type Notes struct {
	sink     Sink
	log      *slog.Logger
	capacity int
	ch       chan store.IncidentEvent
	wake     chan struct{} // a store call answered after an outage, or a window closed
	done     chan struct{}
	dropped  atomic.Int64
	mu       sync.Mutex
	seen     map[noteKey]struct{}
	closing  sync.Once
	out      outages
}

var _ Recorder = (*Notes)(nil)

type noteKey struct {
	actor, endpoint string
	hash            [32]byte
	class           string
	epoch           int64
}

// NewNotes starts a Notes writing to sink, queueing at most capacity
// events (<= 0: DefaultNotesQueue). log receives write failures (never a
// key: events carry only its hash).
func NewNotes(sink Sink, capacity int, log *slog.Logger) *Notes {
	if capacity <= 0 {
		capacity = DefaultNotesQueue
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	n := &Notes{sink: sink, log: log, capacity: capacity, ch: make(chan store.IncidentEvent, capacity),
		wake: make(chan struct{}, 1), done: make(chan struct{}), seen: map[noteKey]struct{}{}}
	n.out.clock = clock.Real()
	go n.run()
	return n
}

// Note queues ev once per key, class and epoch; when the queue is full
// it drops ev and counts it. A request refused because the store is down
// (StoreDownDetail) also counts in the store outage window.
func (n *Notes) Note(ev store.IncidentEvent) {
	k := noteKey{ev.Actor, ev.Endpoint, ev.KeyHash, ev.Class, ev.Epoch}
	if ev.At.IsZero() {
		ev.At = n.out.clock.Now()
	}
	if ev.Detail == StoreDownDetail {
		n.refusedInOutage(ev.At)
	}
	n.mu.Lock()
	if _, ok := n.seen[k]; ok {
		n.mu.Unlock()
		return
	}
	if len(n.seen) >= notesSeen {
		clear(n.seen)
	}
	n.seen[k] = struct{}{}
	n.mu.Unlock()
	select {
	case n.ch <- ev:
	default:
		n.dropped.Add(1)
	}
}

// Dropped returns how many events a full queue lost, or a write that
// failed when Close left no time to try again.
func (n *Notes) Dropped() int64 { return n.dropped.Load() }

// Close writes what is queued and stops the writer. Note must not be
// called after Close. What the store does not take on that last try
// (it is down) is dropped and counted.
func (n *Notes) Close() {
	n.closing.Do(func() { close(n.ch) })
	<-n.done
}

// signal wakes the writer (never blocks).
func (n *Notes) signal() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// run writes events and outage windows until Close. A failed write keeps
// what it carried and waits for the store (a wake, or notesRetry).
func (n *Notes) run() {
	defer close(n.done)
	var (
		pending []store.IncidentEvent // queued or kept through a failed write, at most capacity
		windows []Outage              // closed store outage windows not yet audited
		open    = true                // n.ch not closed
		failing bool                  // the last write failed: log once per outage
	)
	take := func(ev store.IncidentEvent) {
		if len(pending) >= n.capacity {
			n.dropped.Add(1)
			return
		}
		pending = append(pending, ev)
	}
	for {
		windows = append(windows, n.takeWindows()...)
		if len(pending) == 0 && len(windows) == 0 {
			if !open {
				return
			}
			select {
			case ev, ok := <-n.ch:
				if !ok {
					open = false
					continue
				}
				take(ev)
			case <-n.wake:
				continue
			}
		}
	fill:
		for open {
			select {
			case ev, ok := <-n.ch:
				if !ok {
					open = false
					break fill
				}
				take(ev)
			default:
				break fill
			}
		}
		var err error
		windows, err = n.writeWindows(windows)
		for err == nil && len(pending) > 0 {
			k := min(len(pending), notesBatch)
			ctx, cancel := context.WithTimeout(context.Background(), notesWriteTimeout)
			err = n.sink.RecordIncidentEvents(ctx, pending[:k])
			cancel()
			if err == nil {
				pending = pending[k:]
			}
		}
		if err == nil {
			if failing {
				n.log.Info("incident events recorded: the store answers again")
			}
			failing = false
			pending = nil
			continue
		}
		if !open {
			n.dropped.Add(int64(len(pending)))
			n.log.Warn("incident events not recorded at close", "events", len(pending), "outage_windows", len(windows), "err", err)
			return
		}
		if !failing {
			n.log.Warn("incident events not recorded yet: kept for when the store answers", "events", len(pending), "err", err)
			failing = true
		}
		// Wait for the store: a store call that answers wakes us, else
		// retry after notesRetry; Close ends the wait with one last try.
		t := n.out.clock.NewTimer(notesRetry)
		select {
		case <-n.wake:
		case <-t.C():
		case ev, ok := <-n.ch:
			if !ok {
				open = false
			} else {
				take(ev)
			}
		}
		t.Stop()
	}
}

// NoteRouting records on rec (nothing when rec is nil) that region's
// gateway answered a request of actor at endpoint under key, on shard at
// epoch, without running it: held (asked back while the shard was between
// owners) or refused (by the endpoint's failover policy). problem is the
// answer's problem type. Only the key's hash is kept. This is the whole
// of the gateway's part in the ledger: one call where it answers so.
func NoteRouting(rec Recorder, region, actor, endpoint string, key idempotency.Key, shard int, epoch int64,
	held bool, problem string) {
	if rec == nil || key == "" {
		return
	}
	class := store.EventRefused
	if held {
		class = store.EventHeld
	}
	rec.Note(store.IncidentEvent{Class: class, Region: region, Shard: shard, Epoch: epoch, Actor: actor,
		Endpoint: endpoint, KeyHash: key.Hash(), Detail: "503 " + problem})
}
