package chaos

import (
	"context"
	"time"

	"github.com/idemcoord/idemcoord/chaos/history"
	"github.com/idemcoord/idemcoord/chaos/report"
	"github.com/idemcoord/idemcoord/ledger"
	"github.com/idemcoord/idemcoord/store"
)

// ledgerSlack is how long after a region-loss window closed its failover
// may start and still be the window's (the controller confirms a
// failure, then moves): the false-failover rule's slack.
const ledgerSlack = 15 * time.Second

// ledgerStore is what a window's ledger reads: the audit (the incidents)
// and the ledger scan.
type ledgerStore interface {
	store.Auditor
	store.Ledger
}

// windowLedgers returns the incident ledger of each region-loss window of
// the run (report.Build's windows, in its order): the failover of the
// window's region that the audit holds for it, or, when none was audited,
// the window itself on every shard. start is the recorder's start (the
// windows are seconds since it).
func windowLedgers(ctx context.Context, st ledgerStore, h history.History, start time.Time) []report.WindowLedger {
	var out []report.WindowLedger
	var incidents []ledger.Incident
	var auditErr error
	read := false
	for i, f := range h.Filter(history.KindFault) {
		if f.SentTo == "" || f.Skipped || !report.RegionLoss[f.Fault] {
			continue
		}
		if !read {
			incidents, auditErr = ledger.FromAudit(ctx, st, start, time.Now())
			read = true
		}
		from := start.Add(time.Duration(f.Call))
		to := start.Add(time.Duration(f.Return))
		wl := report.WindowLedger{Fault: i, From: from, To: to}
		if auditErr != nil {
			wl.Err = auditErr.Error()
			out = append(out, wl)
			continue
		}
		w := ledger.WindowBetween(from, to, incidents)
		for _, in := range incidents {
			if in.Kind == ledger.KindFailover && in.Region == f.SentTo && !in.From.Before(from) &&
				!in.From.After(to.Add(ledgerSlack)) {
				in := in
				wl.Incident, wl.From, wl.To = &in, in.From, in.To
				w = ledger.WindowOf(in)
				break
			}
		}
		entries, sum, omitted, err := ledger.Collect(ctx, st, w, report.LedgerEntries)
		if err != nil {
			wl.Err = err.Error()
		}
		wl.Entries, wl.Omitted, wl.Summary = entries, omitted, sum.Lines()
		wl.Total, wl.MustAct = sum.Total()
		out = append(out, wl)
	}
	return out
}
