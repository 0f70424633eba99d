package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/store"
)

// ledgerActors returns three actors whose shards lie in the low, middle
// and high thirds of the shard range: on a backend that places shards by
// range (patroni's clusters), their events and records live apart.
func ledgerActors(t *testing.T) [3]string {
	t.Helper()
	var out [3]string
	found := 0
	for i := 0; found < 3 && i < 10000; i++ {
		a := fmt.Sprintf("t/ledger-%d", i)
		third := shard.Of(a, shard.DefaultCount) * 3 / shard.DefaultCount
		if out[third] == "" {
			out[third] = a
			found++
		}
	}
	if found < 3 {
		t.Fatal("no actors spread over the shard range")
	}
	return out
}

// TestTheLedgerReadsAndWritesIncidentEventsAlike holds the incident
// ledger's store calls (store.Ledger) to their doc on every backend, with
// the intents on shards far apart: RecordIncidentEvents keeps one event
// per key, class and epoch; ScanLedger lists every intent of the window
// once, a page at a time (pages of 2 here), each with its record when it
// has one that the window touched and the most telling event (a
// transferred record with its event; held and refused intents without a
// record as Found false, their fields as written), and nothing outside the
// window or its shards: not a record finished before it, not an event
// before From (unless EventsFrom reaches back) or after To; nil Shards is
// every shard, an empty list none.
func (h suite) TestTheLedgerReadsAndWritesIncidentEventsAlike(t *testing.T) {
	ctx := context.Background()
	clk := NewClock()
	s := h.Open(t, clk)
	actors := ledgerActors(t)
	low, mid, high := actors[0], actors[1], actors[2]
	t0 := clk.Now()

	inflight := MustBegin(t, s, Request(t, low, "inflight", `{}`), store.FirstRun) // running when the window opens
	before := MustBegin(t, s, Request(t, mid, "done-before", `{}`), store.FirstRun)
	if err := s.Finish(ctx, before.Lease, Completed(`{}`)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	from := clk.Now()
	to := from.Add(time.Hour)

	event := func(class, actor, key string, at time.Time, epoch int64) store.IncidentEvent {
		return store.IncidentEvent{At: at, Class: class, Region: "west", Shard: shard.Of(actor, shard.DefaultCount),
			Epoch: epoch, Actor: actor, Endpoint: "POST /v1/payments", KeyHash: Key(t, key).Hash(),
			Detail: "503 " + class}
	}
	op := inflight.Lease.OperationID
	transferred := event(store.EventTransferred, low, "inflight", from.Add(20*time.Second), 2)
	transferred.OperationID, transferred.StateBefore = &op, string(idempotency.InProgress)
	events := []store.IncidentEvent{
		event(store.EventHeld, high, "k-held", from.Add(10*time.Second), 1),
		event(store.EventRefused, mid, "k-refused", from.Add(11*time.Second), 1),
		event(store.EventRefused, mid, "k-refused", from.Add(12*time.Second), 1), // the same key, class and epoch: kept once
		event(store.EventRefused, mid, "k-refused", from.Add(13*time.Second), 2), // another epoch: a row, the key listed once
		transferred,
		event(store.EventHeld, high, "k-early", t0.Add(10*time.Second), 1), // before From
		event(store.EventHeld, low, "k-late", to.Add(time.Second), 1),      // after To
	}
	if err := s.RecordIncidentEvents(ctx, events[:3]); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordIncidentEvents(ctx, events[2:]); err != nil { // a retried write: the kept rows stay as they are
		t.Fatal(err)
	}

	scan := func(sc store.LedgerScan) map[string]store.LedgerRow {
		t.Helper()
		rows := map[string]store.LedgerRow{}
		err := s.ScanLedger(ctx, sc, func(r store.LedgerRow) error {
			actor, hash := r.Record.Scope.Actor, r.Record.KeyHash
			if !r.Found {
				actor, hash = r.Event.Actor, r.Event.KeyHash
			}
			name := ""
			for _, k := range []string{"inflight", "done-before", "k-held", "k-refused", "k-early", "k-late"} {
				if Key(t, k).Hash() == hash {
					name = actor + " " + k
				}
			}
			if _, dup := rows[name]; dup || name == "" {
				t.Errorf("scan %+v: intent %q listed again or unknown", sc, name)
			}
			rows[name] = r
			return nil
		})
		if err != nil {
			t.Fatalf("ScanLedger %+v: %v", sc, err)
		}
		return rows
	}
	names := func(rows map[string]store.LedgerRow) map[string]bool {
		out := map[string]bool{}
		for n := range rows {
			out[n] = true
		}
		return out
	}

	rows := scan(store.LedgerScan{From: from, To: to, Page: 2})
	want := map[string]bool{low + " inflight": true, high + " k-held": true, mid + " k-refused": true}
	if got := names(rows); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the window's intents: %v, want %v", got, want)
	}
	if r := rows[low+" inflight"]; !r.Found || r.Record.OperationID != op || r.Event.Class != store.EventTransferred ||
		r.Event.Epoch != 2 || r.StateAtStart != string(idempotency.InProgress) {
		t.Errorf("the in-flight record: found %v, event %+v, state at start %q; want its record, the transferred event "+
			"at epoch 2, IN_PROGRESS at start", r.Found, r.Event, r.StateAtStart)
	}
	held := rows[high+" k-held"]
	if w := events[0]; held.Found || held.Event.Class != store.EventHeld || held.Event.Shard != w.Shard ||
		held.Event.Epoch != 1 || held.Event.Region != "west" || held.Event.Endpoint != w.Endpoint ||
		held.Event.Detail != w.Detail || !held.Event.At.Equal(w.At) {
		t.Errorf("the held intent: found %v, event %+v; want no record and the event as written %+v", held.Found, held.Event, w)
	}
	if r := rows[mid+" k-refused"]; r.Found || r.Event.Class != store.EventRefused || r.Event.Epoch != 1 ||
		!r.Event.At.Equal(events[1].At) {
		t.Errorf("the refused intent: found %v, event %+v; want no record and its first event (epoch 1, %s)",
			r.Found, r.Event, events[1].At)
	}

	if got := names(scan(store.LedgerScan{From: from, To: to, EventsFrom: t0, Page: 2})); !got[high+" k-early"] {
		t.Errorf("EventsFrom before From: %v, want the earlier event's intent too", got)
	}
	only := scan(store.LedgerScan{From: from, To: to, Shards: []int{shard.Of(high, shard.DefaultCount)}})
	if got := names(only); fmt.Sprint(got) != fmt.Sprint(map[string]bool{high + " k-held": true}) {
		t.Errorf("Shards [%d]: %v, want only that shard's intent", shard.Of(high, shard.DefaultCount), got)
	}
	if got := scan(store.LedgerScan{From: from, To: to, Shards: []int{}}); len(got) != 0 {
		t.Errorf("Shards []: %v, want none", names(got))
	}
}
