package history

import (
	"slices"
	"sync"
	"time"
)

// Recorder collects Operations from many goroutines. Its zero value is not
// usable; make one with NewRecorder.
type Recorder struct {
	start time.Time // carries the monotonic reading every offset is taken from

	mu  sync.Mutex
	seq int64
	ops []Operation
}

// NewRecorder returns a Recorder whose offsets count from now.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

// Start returns the wall-clock time offsets count from, so that times the
// database stamped (audit rows) can be placed on the history's timeline.
func (r *Recorder) Start() time.Time { return r.start }

// Now returns the nanoseconds since the start, from the monotonic clock.
func (r *Recorder) Now() int64 { return int64(time.Since(r.start)) }

// Add records op, assigning its Seq, and returns it.
func (r *Recorder) Add(op Operation) Operation {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	op.Seq = r.seq
	r.ops = append(r.ops, op)
	return op
}

// Len returns how many operations were recorded so far.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ops)
}

// History returns a copy of what was recorded, sorted by call time.
func (r *Recorder) History() History {
	r.mu.Lock()
	ops := slices.Clone(r.ops)
	r.mu.Unlock()
	h := History{Start: r.start, Ops: ops}
	h.Sort()
	return h
}

// History is a finished run's record.
type History struct {
	// Start is the wall-clock time offsets count from.
	Start time.Time
	// Ops are the recorded operations, sorted by call time once Sort ran.
	Ops []Operation
}

// Sort orders Ops by call time, then by Seq.
func (h *History) Sort() {
	slices.SortStableFunc(h.Ops, func(a, b Operation) int {
		if a.Call != b.Call {
			if a.Call < b.Call {
				return -1
			}
			return 1
		}
		switch {
		case a.Seq < b.Seq:
			return -1
		case a.Seq > b.Seq:
			return 1
		}
		return 0
	})
}

// At converts a wall-clock time (from the database) to an offset on the
// history's timeline.
func (h History) At(t time.Time) int64 { return int64(t.Sub(h.Start)) }

// ByKey groups the request operations by idempotency key, each group
// sorted by call time.
func (h History) ByKey() map[string][]Operation {
	m := make(map[string][]Operation)
	for _, op := range h.Ops {
		if op.Kind == KindRequest && op.Key != "" {
			m[op.Key] = append(m[op.Key], op)
		}
	}
	return m
}

// Filter returns the operations of kind k, in order.
func (h History) Filter(k Kind) []Operation {
	var out []Operation
	for _, op := range h.Ops {
		if op.Kind == k {
			out = append(out, op)
		}
	}
	return out
}

// Span returns the first call and the last return of the requests, or
// zeros when there are none.
func (h History) Span() (first, last int64) {
	seen := false
	for _, op := range h.Ops {
		if op.Kind != KindRequest {
			continue
		}
		if !seen || op.Call < first {
			first = op.Call
		}
		if !seen || op.Return > last {
			last = op.Return
		}
		seen = true
	}
	return first, last
}
