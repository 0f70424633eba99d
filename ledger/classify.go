package ledger

import (
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// Class is what an incident did to an intent. An intent has exactly one,
// the first that applies in this order: resolved, unknown, transferred,
// in_flight left running by a fenced-out region, refused, held, and
// in_flight for the rest.
type Class string

// The classes, in the order a report lists their summary.
const (
	// InFlight: running (or finished by its own region) when the incident
	// began, not taken over.
	InFlight Class = "in_flight"
	// Held: asked to come back (503 + Retry-After) while its shard was
	// between owners; nothing ran then.
	Held Class = "held"
	// Refused: refused by its endpoint's failover policy (reject) on a
	// failed-over shard; nothing ran then.
	Refused Class = "refused"
	// Transferred: taken over by the region that took its shard over.
	Transferred Class = "transferred"
	// Resolved: an unknown outcome settled through the resolve path (the
	// downstream asked by operation id) or by an operator's reconcile.
	Resolved Class = "resolved"
	// Unknown: OUTCOME_UNKNOWN now: nobody knows whether it ran.
	Unknown Class = "unknown"
)

// Classes lists every class in report order.
var Classes = []Class{InFlight, Held, Refused, Transferred, Resolved, Unknown}

// NotRun is the final state of an intent that has no record: it was only
// held or refused, and its client did not come back (or not yet).
const NotRun = "NOT_RUN"

// NotRecorded is the state when the incident began of a record that
// changed during the incident without an event saying what it was.
const NotRecorded = "not recorded"

// Entry is one line of the ledger. KeyHash is the hex SHA-256 of the
// key: the raw key is never stored, so never shown.
type Entry struct {
	Class        Class  `json:"class"`
	Actor        string `json:"actor"`
	Endpoint     string `json:"endpoint"`
	KeyHash      string `json:"key_hash"`
	OperationID  string `json:"operation_id"`
	Shard        int    `json:"shard"`
	StateAtStart string `json:"state_at_start"`
	Action       string `json:"coordinator_action"`
	FinalState   string `json:"final_state"`
	MustAct      bool   `json:"must_act"`
	NextStep     string `json:"next_step"`
	UpdatedAt    string `json:"updated_at"`
}

// Classify makes row an Entry of window w.
func Classify(row store.LedgerRow, w Window) Entry {
	rec, ev := row.Record, row.Event
	e := Entry{Actor: rec.Scope.Actor, Endpoint: rec.Scope.Endpoint, KeyHash: hex.EncodeToString(rec.KeyHash[:]),
		Shard: rec.Token.Shard}
	if !row.Found {
		e.Actor, e.Endpoint, e.KeyHash, e.Shard = ev.Actor, ev.Endpoint, hex.EncodeToString(ev.KeyHash[:]), ev.Shard
		e.Class, e.StateAtStart, e.FinalState = Class(ev.Class), "-", NotRun
		e.Action = fmt.Sprintf("%s by %s (%s); nothing ran", ev.Class, ev.Region, ev.Detail)
		e.NextStep = "none: the client was told nothing ran and to retry with the same key"
		if downstreamWindow(ev.Detail) {
			e.MustAct, e.NextStep = true, "the downstream's key window passed: reconcile with the downstream (idemctl op reconcile)"
		}
		if ev.OperationID != nil {
			e.OperationID = ev.OperationID.String()
		}
		if ev.Class == store.EventHeld || ev.Class == store.EventRefused {
			return e
		}
		e.Class = Class(ev.Class)
		return e
	}
	e.OperationID = rec.OperationID.String()
	e.FinalState = string(rec.State)
	e.UpdatedAt = rec.UpdatedAt.UTC().Format(time.RFC3339)
	unchanged := rec.UpdatedAt.Before(w.From)
	switch {
	case unchanged:
		e.StateAtStart = string(rec.State)
	case row.StateAtStart != "":
		e.StateAtStart = row.StateAtStart
	case ev.StateBefore != "":
		e.StateAtStart = ev.StateBefore
	default:
		e.StateAtStart = NotRecorded
	}
	mv, moved := w.Moves[rec.Token.Shard]
	running := rec.State == idempotency.Pending || rec.State == idempotency.InProgress
	fenced := running && moved && rec.Token.Epoch < mv.ToEpoch
	refused := ev.Class == store.EventRefused || ev.Class == store.EventHeld
	switch {
	case !unchanged && strings.HasPrefix(rec.LeaseOwner, "reconcile/"):
		e.Class, e.StateAtStart = Resolved, string(idempotency.OutcomeUnknown)
		e.Action = "reconciled by an operator (idemctl op reconcile; see idemctl audit --operation " + e.OperationID + ")"
	case !unchanged && (ev.Class == store.EventResolved || strings.HasPrefix(rec.LeaseOwner, "resolve/")):
		e.Class, e.StateAtStart = Resolved, string(idempotency.OutcomeUnknown)
		e.Action = "resolved through the resolve path: the downstream was asked by operation id"
		if ev.Class == store.EventResolved {
			e.Action += " (by " + ev.Region + ")"
		}
	case rec.State == idempotency.OutcomeUnknown:
		e.Class = Unknown
		e.Action = "left OUTCOME_UNKNOWN: never re-run blindly"
		if e.StateAtStart == NotRecorded {
			e.StateAtStart = string(idempotency.InProgress) // only a run ends unknown
		}
		e.MustAct = true
		e.NextStep = "ask the downstream by operation id, then idemctl op reconcile " + e.OperationID
	case ev.Class == store.EventTransferred:
		e.Class = Transferred
		e.Action = fmt.Sprintf("taken over by %s at epoch %d (%s)", ev.Region, ev.Epoch, ev.Detail)
	case fenced:
		e.Class = InFlight
		e.Action = fmt.Sprintf("left alone: its region was fenced out at epoch %d (shard moved to %s)", mv.ToEpoch, mv.To)
		if refused {
			e.Action += fmt.Sprintf("; its retries were %s by %s (%s)", ev.Class, ev.Region, ev.Detail)
		}
		e.MustAct = true
		e.NextStep = "reconcile before accepting the new owner: idemctl op get " + e.OperationID + ", then idemctl op reconcile"
	case refused:
		e.Class = Class(ev.Class)
		e.Action = fmt.Sprintf("its retries were %s by %s (%s); nothing ran for them", ev.Class, ev.Region, ev.Detail)
		if !running {
			e.Action += "; it ended " + string(rec.State) + " after"
		}
	default:
		e.Class = InFlight
		switch {
		case running:
			e.Action = "still running under its lease"
		case unchanged:
			e.Action = "finished before the incident began"
		default:
			e.Action = "finished by its own region"
		}
	}
	if e.NextStep == "" {
		e.NextStep = "none"
		if downstreamWindow(ev.Detail) {
			e.MustAct, e.NextStep = true, "the downstream's key window passed: reconcile with the downstream (idemctl op reconcile)"
		}
	}
	return e
}

// downstreamWindow reports whether an event's answer was the downstream
// key window's refusal (409 downstream-window-passed): the operation is
// left for a person.
func downstreamWindow(detail string) bool {
	return strings.Contains(detail, "downstream-window-passed")
}
