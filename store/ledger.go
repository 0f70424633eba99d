package store

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// The incident ledger's rows, as the store keeps and reads them. What the
// rows mean (the classes, a person's next step) is package ledger's.

// Incident event classes the coordinator records (IncidentEvent.Class).
const (
	// EventHeld: a request whose shard was between owners (moving, or its
	// owner suspect) was held and asked back with Retry-After; nothing
	// ran.
	EventHeld = "held"
	// EventRefused: a request was refused by its endpoint's failover
	// policy (reject on a FAILED_OVER shard); nothing ran.
	EventRefused = "refused"
	// EventTransferred: a region that took over a shard wrote a record
	// another epoch left (a takeover); StateBefore is the state it found.
	EventTransferred = "transferred"
	// EventResolved: an OUTCOME_UNKNOWN record another epoch left was
	// settled through the resolve path by the new owner.
	EventResolved = "resolved"
)

// IncidentEvent is one thing the coordinator did to an intent during an
// incident that the intent's record does not keep. Only the key's hash
// is stored.
type IncidentEvent struct {
	// At is when it happened (the store's clock when zero).
	At time.Time
	// Class is one of the Event* constants.
	Class string
	// Region is the region that did it.
	Region string
	// Shard and Epoch are the intent's shard and the epoch the region
	// saw it at: one row per key, class and epoch is kept.
	Shard int
	Epoch int64
	// Actor, Endpoint and KeyHash name the intent.
	Actor    string
	Endpoint string
	KeyHash  [32]byte
	// OperationID is the operation, when a record existed.
	OperationID *uuid.UUID
	// StateBefore is the record's state before the coordinator acted
	// ("" when there was no record).
	StateBefore string
	// Detail is the answer given (a problem type) or what was done.
	Detail string
}

// LedgerScan selects the intents an incident touched.
type LedgerScan struct {
	// From and To bound the window (required).
	From, To time.Time
	// EventsFrom is where the window's events begin, when before From:
	// a failover's requests are held from the region's death, before
	// its first fence move (zero: From).
	EventsFrom time.Time
	// Shards keeps those shards' intents (nil: every shard).
	Shards []int
	// Page is how many rows one read returns (default 500, at most
	// 5000): the memory the scan holds.
	Page int
}

// LedgerRow is one intent of a window: its record as it is now (Found
// false when the intent has none: it was only held or refused) and the
// most telling event the coordinator recorded for it in the window
// (resolved, then transferred, then refused, then held; Event.Class ""
// when none).
type LedgerRow struct {
	Found  bool
	Record Record
	Event  IncidentEvent
	// StateAtStart is the state the record had at From, as the first
	// takeover or resolve across epochs at or after From found it (the
	// first write after a move is that one: the old owner is fenced
	// out); "" when none was recorded.
	StateAtStart string
}

// DefaultLedgerPage is LedgerScan.Page's default: a read of some 500 rows
// is a few hundred kilobytes, and a million-record store pages in about
// 2000 reads.
const DefaultLedgerPage = 500

// Ledger keeps the incident events and reads a window's intents for the
// incident ledger.
type Ledger interface {
	// RecordIncidentEvents writes events; one already kept for the same
	// key, class and epoch is left as it is.
	RecordIncidentEvents(ctx context.Context, events []IncidentEvent) error
	// ScanLedger calls fn with every intent of the window, a page of
	// rows read at a time (keyset reads, never the whole window at once):
	// the records created before s.From that were still running or
	// unknown then or changed after it, and the events of the window
	// whose intent has no such record. fn's error stops the scan.
	ScanLedger(ctx context.Context, s LedgerScan, fn func(LedgerRow) error) error
}
