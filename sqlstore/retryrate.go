package sqlstore

import "sync"

// retryRate tracks, per endpoint, how many claims find an existing record
// (retries) rather than creating one, and picks the cheaper claim path:
//
//   - claim first (claimSQL): one round trip for a first run and for a
//     retry, but a retry pays the fence lock the insert takes before it
//     finds the record;
//   - read first: a retry costs one plain point read, a first run three
//     round trips (read, claim, finish).
//
// Reading first pays when retries dominate (a retry storm after an outage,
// a client replaying a batch). Either path is correct: only the claim's
// insert under the unique key arbitrates.
type retryRate struct {
	mu     sync.Mutex
	m      map[string]*rate
	pinned bool // tests: always claim first
}

type rate struct {
	ewma      float64
	readFirst bool
}

// Thresholds with hysteresis so the path does not flap around one value.
const (
	retryAlpha    = 1.0 / 64 // EWMA weight: about the last 64 claims
	readFirstOn   = 0.8      // switch to read-first above this retry share
	readFirstOff  = 0.6      // and back below this one
	retryRateKeys = 4096     // endpoints tracked; more are not expected
)

func (r *retryRate) readFirst(endpoint string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rt := r.m[endpoint]; rt != nil && !r.pinned {
		return rt.readFirst
	}
	return false
}

func (r *retryRate) observe(endpoint string, retry bool) {
	x := 0.0
	if retry {
		x = 1
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]*rate{}
	}
	rt := r.m[endpoint]
	if rt == nil {
		if len(r.m) >= retryRateKeys {
			return
		}
		rt = &rate{}
		r.m[endpoint] = rt
	}
	rt.ewma += retryAlpha * (x - rt.ewma)
	switch {
	case !rt.readFirst && rt.ewma > readFirstOn:
		rt.readFirst = true
	case rt.readFirst && rt.ewma < readFirstOff:
		rt.readFirst = false
	}
}
