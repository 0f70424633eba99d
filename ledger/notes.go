package ledger

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

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

// Sink writes incident events (store.Ledger's writer; *sqlstore.Store).
type Sink interface {
	RecordIncidentEvents(ctx context.Context, events []store.IncidentEvent) error
}

// Notes defaults, each bounding what the gateway spends on the ledger.
const (
	// DefaultNotesQueue is how many events wait for the store at most: a
	// failover refuses each retrying client once per key and epoch
	// (the dedup below), so this is thousands of distinct intents held in
	// a second or two; past it events are dropped and counted (Dropped),
	// never waited for.
	DefaultNotesQueue = 4096
	// notesBatch is how many events one store write carries.
	notesBatch = 256
	// notesSeen bounds the keys remembered to write each (key, class,
	// epoch) once; the set is cleared when full, after which the store's
	// unique index still keeps one row per intent.
	notesSeen = 65536
	// notesWriteTimeout bounds one store write.
	notesWriteTimeout = 5 * time.Second
)

// Notes is the gateway's Recorder: a bounded queue that writes events to
// a Sink in batches from one goroutine, which Close stops and waits for.
type Notes struct {
	sink    Sink
	log     *slog.Logger
	ch      chan store.IncidentEvent
	done    chan struct{}
	dropped atomic.Int64
	mu      sync.Mutex
	seen    map[noteKey]struct{}
	closing sync.Once
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
	n := &Notes{sink: sink, log: log, ch: make(chan store.IncidentEvent, capacity), done: make(chan struct{}),
		seen: map[noteKey]struct{}{}}
	go n.run()
	return n
}

// Note queues ev once per key, class and epoch; when the queue is full
// it drops ev and counts it.
func (n *Notes) Note(ev store.IncidentEvent) {
	k := noteKey{ev.Actor, ev.Endpoint, ev.KeyHash, ev.Class, ev.Epoch}
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
	if ev.At.IsZero() {
		ev.At = time.Now()
	}
	select {
	case n.ch <- ev:
	default:
		n.dropped.Add(1)
	}
}

// Dropped returns how many events a full queue or a failed write lost.
func (n *Notes) Dropped() int64 { return n.dropped.Load() }

// Close writes what is queued and stops the writer. Note must not be
// called after Close.
func (n *Notes) Close() {
	n.closing.Do(func() { close(n.ch) })
	<-n.done
}

func (n *Notes) run() {
	defer close(n.done)
	batch := make([]store.IncidentEvent, 0, notesBatch)
	for ev := range n.ch {
		batch = append(batch[:0], ev)
	fill:
		for len(batch) < notesBatch {
			select {
			case ev, ok := <-n.ch:
				if !ok {
					break fill
				}
				batch = append(batch, ev)
			default:
				break fill
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), notesWriteTimeout)
		err := n.sink.RecordIncidentEvents(ctx, batch)
		cancel()
		if err != nil {
			n.dropped.Add(int64(len(batch)))
			n.log.Warn("incident events not recorded", "events", len(batch), "err", err)
		}
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
