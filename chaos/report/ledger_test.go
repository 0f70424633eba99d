package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/ledger"
)

// TestEachRegionLossWindowLinksToItsIncidentLedger: a window with a
// ledger links, from its row of the fault table, to a section of the same
// page that names the failover's incident and lists its intents with
// their class, final state and whether a person must act; the text
// report carries the same summary under the window.
func TestEachRegionLossWindowLinksToItsIncidentLedger(t *testing.T) {
	r := Build(synthetic())
	from := time.Date(2026, 12, 6, 14, 0, 4, 0, time.UTC)
	in := ledger.Incident{ID: "3f2a9c1e", Kind: ledger.KindFailover, Region: "us-east", From: from,
		To: from.Add(3 * time.Second), EndedBy: "77aa00bb", Shards: []int{1, 2}}
	sum := ledger.Summary{Count: map[ledger.Class]int{ledger.InFlight: 1, ledger.Transferred: 1},
		MustAct: map[ledger.Class]int{ledger.InFlight: 1}}
	r.Ledgers = []WindowLedger{{Fault: 0, Incident: &in, From: in.From, To: in.To, Summary: sum.Lines(), Total: 2, MustAct: 1,
		Entries: []ledger.Entry{
			{Class: ledger.InFlight, OperationID: "op-1", Actor: "demo/a", Endpoint: "pay", KeyHash: strings.Repeat("ab", 32),
				StateAtStart: "IN_PROGRESS", Action: "left alone", FinalState: "IN_PROGRESS", MustAct: true, NextStep: "reconcile op-1"},
			{Class: ledger.Transferred, OperationID: "op-2", Actor: "demo/a", Endpoint: "pay", KeyHash: strings.Repeat("cd", 32),
				StateAtStart: "IN_PROGRESS", Action: "taken over", FinalState: "COMPLETED"},
		}}}
	var b bytes.Buffer
	if err := r.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if !regexp.MustCompile(`<td>kill_region us-east for 2s</td>.*<a href="#ledger-F1">2 intents, 1 must act</a>`).MatchString(page) {
		t.Errorf("the fault table's row of F1 does not link to its ledger")
	}
	sec := page[strings.Index(page, `id="ledger-F1"`):]
	for _, want := range []string{"F1: failover of us-east, incident 3f2a9c1e, 2 shards", "in_flight 1 (1 must act), transferred 1",
		"<code>op-1</code>", "<code>abababababab</code>", `<span class="fail">yes</span>: reconcile op-1`, "<td>COMPLETED</td><td>no</td>"} {
		if !strings.Contains(sec, want) {
			t.Errorf("the ledger section lacks %q", want)
		}
	}
	if strings.Contains(page, strings.Repeat("ab", 32)) {
		t.Errorf("the page shows the whole key hash; want its first 12 digits")
	}
	var txt bytes.Buffer
	if err := r.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "ledger F1: failover of us-east, incident 3f2a9c1e") ||
		!strings.Contains(txt.String(), "2 intents, 1 must act: in_flight 1 (1 must act), transferred 1") {
		t.Errorf("text report lacks the window's ledger:\n%s", txt.String())
	}

	// No ledger (not a region loss, or no store): no link, no section.
	r.Ledgers = nil
	b.Reset()
	if err := r.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "ledger-F1") || strings.Contains(b.String(), `id="ledgers"`) {
		t.Errorf("a report without ledgers links to one")
	}
}
