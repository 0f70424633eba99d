package traffic

import (
	"sync"

	"github.com/idemcoord/idemcoord/chaos/history"
)

// Progress is a live count of what the traffic saw, for a progress line.
type Progress struct {
	Requests int
	Acked    int
	// Errors counts attempts without a final success by class: an HTTP
	// status ("503") or a history.ErrorClass.
	Errors map[string]int
}

type counters struct {
	mu sync.Mutex
	p  Progress
}

func (c *counters) observe(op history.Operation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.p.Requests++
	switch {
	case op.Acknowledged():
		c.p.Acked++
	case op.Error != history.ErrNone:
		c.bump(string(op.Error))
	default:
		c.bump(statusText(op.Status))
	}
}

func (c *counters) bump(k string) {
	if c.p.Errors == nil {
		c.p.Errors = map[string]int{}
	}
	c.p.Errors[k]++
}

func statusText(s int) string {
	const digits = "0123456789"
	if s < 100 || s > 999 {
		return "status"
	}
	return string([]byte{digits[s/100], digits[s/10%10], digits[s%10]})
}

// Progress returns a copy of the live counts.
func (tr *Traffic) Progress() Progress {
	tr.counts.mu.Lock()
	defer tr.counts.mu.Unlock()
	p := tr.counts.p
	p.Errors = make(map[string]int, len(tr.counts.p.Errors))
	for k, v := range tr.counts.p.Errors {
		p.Errors[k] = v
	}
	return p
}
