package validate

import "github.com/idemcoord/idemcoord/chaos/history"

// coverage counts what the run exercised, from the history and the state.
func (ix *index) coverage() Coverage {
	var c Coverage
	for _, p := range ix.h.Filter(history.KindProbe) {
		switch p.Probe {
		case history.ProbeStaleEpochRejected:
			c.StaleEpochRejected++
		case history.ProbeRetry40001:
			c.Retries40001++
		}
	}
	for _, r := range ix.st.Records {
		if r.Attempts > 1 {
			c.Takeovers++
		}
	}
	for _, ops := range ix.keys {
		if ambiguousResolved(ops) {
			c.AmbiguousResolved++
		}
	}
	first, last := ix.h.Span()
	for _, ms := range ix.moves {
		for _, m := range ms {
			if at := ix.h.At(m.At); at >= first && at <= last {
				c.MovesUnderLoad++
			}
		}
	}
	return c
}

// ambiguousResolved reports an ambiguous outcome (not a 503, which says
// nothing ran) followed by an acknowledged answer for the same key.
func ambiguousResolved(ops []history.Operation) bool {
	var unknownAt int64
	seen := false
	for _, op := range ops {
		if op.Ambiguous() && !seen {
			unknownAt, seen = op.Return, true
		}
		if op.Acknowledged() && seen && op.Call >= unknownAt {
			return true
		}
	}
	return false
}
