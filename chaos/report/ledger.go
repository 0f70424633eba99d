package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/idemcoord/idemcoord/ledger"
)

// LedgerEntries bounds the entries a window's ledger embeds in the
// report (the must-act ones first); the summary counts them all.
const LedgerEntries = 200

// WindowLedger is the incident ledger of one region-loss window (package
// ledger): the intents the failover the fault caused touched, and how
// each ended, as the run's store held them when the drill ended. It is
// what `idemctl incident report ID` prints for that failover.
type WindowLedger struct {
	// Fault is the window's index in Report.Faults.
	Fault int
	// Incident is the failover of the fault's region the audit holds
	// for the window; nil when none was audited (the window's own times,
	// on every shard, are reported then).
	Incident *ledger.Incident
	// From and To are the ledger's window (wall clock).
	From, To time.Time
	// Summary counts the intents by class; Total and MustAct in all.
	Summary        []ledger.ClassCount
	Total, MustAct int
	// Entries are up to LedgerEntries of them; Omitted the rest.
	Entries []ledger.Entry
	Omitted int
	// Err is why the ledger could not be read, "" when it was.
	Err string
}

// Anchor is the HTML id of the window's ledger section.
func (l WindowLedger) Anchor() string { return "ledger-" + faultLabel(l.Fault) }

// Title names the window's ledger: the fault's label and the incident.
func (l WindowLedger) Title() string {
	if l.Incident == nil {
		return fmt.Sprintf("%s: no failover audited in the window; every intent of %s to %s", faultLabel(l.Fault),
			l.From.UTC().Format(time.TimeOnly), l.To.UTC().Format(time.TimeOnly))
	}
	in := l.Incident
	to := in.To.UTC().Format(time.TimeOnly)
	if in.Open {
		to = "still open when the drill ended"
	} else if in.EndedBy != "" {
		to += " (ended by incident " + in.EndedBy + ")"
	}
	return fmt.Sprintf("%s: %s of %s, incident %s, %d shards, %s to %s", faultLabel(l.Fault), in.Kind, in.Region, in.ID,
		len(in.Shards), in.From.UTC().Format(time.TimeOnly), to)
}

// Counts is the summary in a line: the non-zero classes.
func (l WindowLedger) Counts() string {
	var parts []string
	for _, c := range l.Summary {
		if c.Count == 0 {
			continue
		}
		p := fmt.Sprintf("%s %d", c.Class, c.Count)
		if c.MustAct > 0 {
			p += fmt.Sprintf(" (%d must act)", c.MustAct)
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return "no intent touched"
	}
	return strings.Join(parts, ", ")
}

// LedgerOf returns fault window i's ledger, nil when it has none (not a
// region loss, or no store to read).
func (r Report) LedgerOf(i int) *WindowLedger {
	for k := range r.Ledgers {
		if r.Ledgers[k].Fault == i {
			return &r.Ledgers[k]
		}
	}
	return nil
}

// short is the table's form of a key hash: its first 12 hex digits.
func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
