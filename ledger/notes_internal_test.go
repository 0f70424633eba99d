package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// downSink is a Sink whose writes fail while down, and which reports each
// write it is asked for. It stands for the store's availability only: what
// is tested is the queue in front of it.
type downSink struct {
	mu       sync.Mutex
	down     bool
	events   []store.IncidentEvent
	audits   []string
	attempts chan struct{}
}

func (s *downSink) RecordIncidentEvents(ctx context.Context, events []store.IncidentEvent) error {
	defer func() { s.attempts <- struct{}{} }()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return errors.New("store down")
	}
	s.events = append(s.events, events...)
	return nil
}

func (s *downSink) Audit(ctx context.Context, operator, action, reason, detail string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return errors.New("store down")
	}
	s.audits = append(s.audits, operator+" "+action+" "+detail)
	return nil
}

func (s *downSink) setDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

// TestNotesTakenWhileTheStoreIsDownAreKeptBoundedAndWrittenAfter: events
// noted while the store is down are not lost with the failed write: at
// most the queue's capacity waits (the queue and the kept batch), the rest
// is counted as dropped, and once a store call answers again (the watch
// closes the outage) everything kept is written, with the outage window
// audited (its refusals counted); Close writes what is still queued.
func TestNotesTakenWhileTheStoreIsDownAreKeptBoundedAndWrittenAfter(t *testing.T) {
	sink := &downSink{down: true, attempts: make(chan struct{}, 100)}
	const capacity, noted = 4, 20
	n := NewNotes(sink, capacity, nil)
	n.out.region, n.out.worker = "west", "west-1"
	n.storeFailed()
	for i := range noted {
		n.Note(store.IncidentEvent{Class: store.EventRefused, Region: "west", Actor: "t/a", Endpoint: "e",
			KeyHash: idempotency.Key(fmt.Sprint("k-", i)).Hash(), Detail: StoreDownDetail})
	}
	select {
	case <-sink.attempts: // the writer tried, and failed
	case <-time.After(30 * time.Second):
		t.Fatal("the writer never tried to write")
	}
	sink.setDown(false)
	n.storeAnswered(n.outageGen()) // a store call answered: the window closes and the writer wakes
	n.Close()
	sink.mu.Lock()
	defer sink.mu.Unlock()
	written, dropped := len(sink.events), int(n.Dropped())
	if written+dropped != noted || written < capacity || written > 2*capacity {
		t.Errorf("%d written and %d dropped of %d noted; want all accounted for, and between %d and %d kept",
			written, dropped, noted, capacity, 2*capacity)
	}
	if len(sink.audits) != 1 || !strings.Contains(sink.audits[0], "gateway/west-1 store_outage region=west worker=west-1") ||
		!strings.HasSuffix(sink.audits[0], fmt.Sprintf("refused=%d", noted)) {
		t.Errorf("audits %q: want the one outage window with its %d refusals", sink.audits, noted)
	}
}
